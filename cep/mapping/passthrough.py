"""`@map(type='passThrough')`, and no `@map` at all: this system's own event JSON.

Input: `{"stream": "S", "timestamp": ms, "data": [v, ...]}` (or `"data": {"attr": v}`),
`{"attr": v, ...}`, `[v, ...]` or `[ts, [v, ...]]`; the timestamp is kept when given. Values
are checked by the receiver's validator afterwards, as for the worker's own endpoint. Output:
the same `{"stream", "timestamp", "data"}` objects (`cep run`'s JSON lines); a batch is a JSON
array."""

import msgspec

from cep.mapping.base import Decoded, InputMapper, OutputMapper, now_ms
from cep.mapping.convert import short
from cep.mapping.errors import PayloadError
from cep.mapping.spec import MapSpec, Schema

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class PassThroughInputMapper(InputMapper):
    type = "passthrough"

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        self._index = {n: i for i, n in enumerate(schema.names)}

    def decode(self, payloads, now=None) -> Decoded:
        payloads = payloads if isinstance(payloads, (list, tuple)) else list(payloads)
        now = now_ms() if now is None else now
        pairs, errors = [], []
        for i, p in enumerate(payloads):
            try:
                doc = p if isinstance(p, (dict, list, tuple)) else _decode(p)
                items = (
                    doc
                    if isinstance(doc, list)
                    and doc
                    and isinstance(doc[0], (dict, list))
                    and not _is_pair(doc)
                    else [doc]
                )
                pairs.extend(self._pair(x, now) for x in items)
            except (PayloadError, msgspec.DecodeError, TypeError, ValueError) as exc:
                errors.append((i, str(exc)))
        with self._lock:
            self.events += len(pairs)
            self.errors += len(errors)
            self.recent_errors.extend(errors[:20])
        if errors:
            self._log(errors, len(payloads))
        return Decoded(pairs, errors)

    def _pair(self, x, now):
        if isinstance(x, dict):
            data = x.get("data", None)
            if data is None:
                return now, self._named(x)
            stream = x.get("stream")
            if stream is not None and stream != self.schema.id:
                raise PayloadError(f"event names stream {stream!r}, this is {self.schema.id!r}")
            ts = x.get("timestamp")
            return (now if ts is None else ts), (
                self._named(data) if isinstance(data, dict) else tuple(data)
            )
        if _is_pair(x):
            return (now if x[0] is None else x[0]), tuple(x[1])
        if isinstance(x, (list, tuple)):
            return now, tuple(x)
        raise PayloadError(f"an event must be a JSON object or array, got {short(x)}")

    def _named(self, mapping):
        unknown = [k for k in mapping if k not in self._index and k not in ("timestamp", "stream")]
        if unknown:
            raise PayloadError(
                f"unknown attribute {unknown[0]!r}; stream {self.schema.id} has "
                f"({', '.join(self.schema.names)})"
            )
        return tuple(mapping.get(n) for n in self.schema.names)


def _is_pair(x):
    return (
        isinstance(x, (list, tuple))
        and len(x) == 2
        and (x[0] is None or type(x[0]) is int)
        and isinstance(x[1], (list, tuple))
    )


class PassThroughOutputMapper(OutputMapper):
    type = "passthrough"

    def encode(self, events) -> list:
        sid = self.schema.id
        return [_text({"stream": sid, "timestamp": ts, "data": list(row)}) for ts, row in events]

    def encode_batch(self, events) -> str:
        return "[" + ",".join(self.encode(events)) + "]"


def _text(obj):
    try:
        return _encode(obj).decode()
    except (TypeError, msgspec.EncodeError):
        import json

        return json.dumps(obj, default=str)
