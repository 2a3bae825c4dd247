"""Redis sink: XADD every event to a Redis stream, one pipeline round trip per batch.

Entry fields: `timestamp` (epoch ms) and `data` (the row as a JSON array), plus `stream`."""
import json

import redis

from publishers.base import Sink
from publishers.exceptions import SinkWriteError


class RedisSink(Sink):
    """`@sink(type='redis', url='redis://host:6379/0', key='alerts', maxlen='100000')`."""
    type = "redis"

    def __init__(self, stream, options, client=None):
        super().__init__(stream, options)
        self.url = str(self.option("url", "redis://127.0.0.1:6379/0"))
        self.key = str(self.option("key", stream))
        self.maxlen = self.int_option("maxlen", None)
        self.client = client or redis.Redis.from_url(
            self.url, socket_timeout=self.float_option("timeout", 5.0))

    def write_batch(self, events):
        pipe = self.client.pipeline(transaction=False)
        for ts, row in events:
            pipe.xadd(self.key, {"stream": self.stream, "timestamp": ts,
                                 "data": json.dumps(list(row))},
                      maxlen=self.maxlen, approximate=self.maxlen is not None)
        try:
            pipe.execute()
        except redis.RedisError as exc:
            raise SinkWriteError(f"redis sink {self.url} key {self.key}: {exc}") from None
        self.written += len(events)

    def close(self):
        self.client.close()

    def describe(self):
        return {**super().describe(), "url": self.url, "key": self.key}
