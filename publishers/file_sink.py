"""File sink: JSON lines `{"stream","timestamp","data"}` appended to `path`, flushed per batch
(with a `@map`, one mapped message a line).

With `roots` (the host policy's file roots of the plan's tenant, cep.policy) the path must lie
under one of them: it is checked when the sink is built and again when the file is opened,
which refuses a final symlink (O_NOFOLLOW); a relative path is taken under the first root."""

import os
import threading

from cep.policy import PolicyViolation, confine, open_confined
from publishers.base import Sink
from publishers.exceptions import SinkConfigError, SinkWriteError


class FileSink(Sink):
    """`@sink(type='file', path='/var/out/alerts.jsonl', append='true')`."""

    type = "file"

    def __init__(self, stream, options, roots=None):
        super().__init__(stream, options)
        self.path = str(self.option("path", required=True))
        self.append = str(self.option("append", "true")).lower() != "false"
        self.roots = None if roots is None else tuple(roots)
        if self.roots is not None:
            try:
                confine(self.path, self.roots)
            except PolicyViolation as exc:
                raise SinkConfigError(f"@sink(type='file') on stream {stream}: {exc}") from None
        self._fh = None
        self._lock = threading.Lock()

    def _file(self):
        if self._fh is None:
            mode = "a" if self.append else "w"
            if self.roots is not None:
                self._fh = open_confined(self.path, self.roots, mode)
            else:
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
                self._fh = open(self.path, mode, encoding="utf-8")
        return self._fh

    def write_batch(self, events):
        text = self.render_lines(events)
        with self._lock:
            try:
                fh = self._file()
                fh.write(text)
                fh.flush()
            except (OSError, PolicyViolation) as exc:
                raise SinkWriteError(f"file sink {self.path}: {exc}") from None
        self.written += len(events)

    def close(self):
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def describe(self):
        return {**super().describe(), "path": self.path}
