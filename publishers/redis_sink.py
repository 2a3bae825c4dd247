"""Redis sink: XADD every event to a Redis stream, one pipeline round trip per batch.

Entry fields: `timestamp` (epoch ms) and `data` (the row as a JSON array, NaN as null), plus
`stream`. With `connections` (the host policy's {name: url}, cep.policy.hosts) the sink must
name one with `connection='name'` (or give exactly its url); other servers are refused.
With a `@map`, an entry is the mapped event: a key-value map's fields (values as text), any
other map's message in the field `message`."""

import re

import redis

from cep.policy import PolicyViolation
from cep.policy.hosts import redis_url
from cep.mapping.convert import to_text
from publishers.base import Sink, _dumps, _finite
from publishers.exceptions import SinkConfigError, SinkWriteError


def _row_json(row):
    try:
        return _dumps(list(row))
    except ValueError:
        return _dumps(_finite(list(row)))


class RedisSink(Sink):
    """`@sink(type='redis', connection='main', key='alerts', maxlen='100000')`, or
    `url='redis://host:6379/0'` where no policy applies."""

    type = "redis"

    def __init__(self, stream, options, client=None, connections=None):
        super().__init__(stream, options)
        if connections is not None:
            try:
                self.url = redis_url(self.options, connections)
            except PolicyViolation as exc:
                raise SinkConfigError(f"@sink(type='redis') on stream {stream}: {exc}") from None
        else:
            self.url = str(self.option("url", "redis://127.0.0.1:6379/0"))
        self.key = str(self.option("key", stream))
        self.maxlen = self.int_option("maxlen", None)
        self.client = client or redis.Redis.from_url(
            self.url, socket_timeout=self.float_option("timeout", 5.0)
        )

    def write_batch(self, events):
        pipe = self.client.pipeline(transaction=False)
        for fields in self._entries(events):
            pipe.xadd(self.key, fields, maxlen=self.maxlen, approximate=self.maxlen is not None)
        try:
            pipe.execute()
        except redis.RedisError as exc:
            raise SinkWriteError(f"redis sink {self.url} key {self.key}: {exc}") from None
        self.written += len(events)

    def _entries(self, events):
        if self.mapper is None:
            return [
                {"stream": self.stream, "timestamp": ts, "data": _row_json(row)}
                for ts, row in events
            ]
        mapped = self.mapper.encode(events)
        if self.mapper.type == "keyvalue":
            return [{k: to_text(v) for k, v in m.items()} for m in mapped]
        return [{"message": m} for m in mapped]

    def close(self):
        self.client.close()

    def describe(self):
        shown = re.sub(r"//[^@/]*@", "//", self.url)  # no password in status pages
        return {
            **super().describe(),
            "url": shown,
            "connection": self.options.get("connection"),
            "key": self.key,
        }
