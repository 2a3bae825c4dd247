"""Log sink (the default): every event as a JSON line on the `publishers.log` logger (with a
`@map`, the mapped message)."""

import logging

from publishers.base import Sink, event_json, message_text
from publishers.exceptions import SinkConfigError

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}


class LogSink(Sink):
    """`@sink(type='log', prefix='...', priority='info')`."""

    type = "log"

    def __init__(self, stream, options, logger=None):
        super().__init__(stream, options)
        level = str(self.option("priority", self.option("level", "info"))).lower()
        if level not in LEVELS:
            raise SinkConfigError(
                f"@sink(type='log') on stream {stream}: priority={level!r} "
                f"is not one of {', '.join(LEVELS)}"
            )
        self.level = LEVELS[level]
        self.prefix = self.option("prefix", "")
        self.logger = logger or logging.getLogger("publishers.log")

    def write_batch(self, events):
        if self.logger.isEnabledFor(self.level):
            if self.mapper is not None:
                for m in self.mapper.encode(events):
                    self.logger.log(self.level, "%s%s", self.prefix, message_text(m))
            else:
                for ts, row in events:
                    self.logger.log(
                        self.level, "%s%s", self.prefix, event_json(self.stream, ts, row)
                    )
        self.written += len(events)
