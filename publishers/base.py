"""The sink shape (bytewax's sink partition): write_batch, close, describe; and the JSON form.

An output event is printed as `{"stream": id, "timestamp": ms, "data": [values]}`, one JSON
object a line, exactly as `cep run` prints them. The text is always valid JSON: a NaN or an
infinity (which Python's json would write as bare `NaN`/`Infinity`) is written as null, as
JavaScript's JSON.stringify does; the batch without such values takes the fast path.

A sink with a `@map(...)` (cep.mapping) has an output `mapper`, set by build_sink: its
`render_lines` and `messages` then give the mapped text instead."""

import json
import math

from publishers.exceptions import SinkConfigError

_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def _finite(value):
    """`value` with every NaN/infinity (at any depth) replaced by None."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def _safe(events):
    return [(ts, _finite(list(row))) for ts, row in events]


def event_json(stream, ts, row):
    """One output event as its JSON line (without the newline)."""
    try:
        return _dumps({"stream": stream, "timestamp": ts, "data": list(row)})
    except ValueError:
        return _dumps({"stream": stream, "timestamp": ts, "data": _finite(list(row))})


def batch_json_lines(stream, events):
    """Every event of a batch as JSON lines, newline-terminated (the same text as event_json,
    built without a dict per event)."""
    head = '{"stream": ' + _dumps(stream) + ', "timestamp": '
    try:
        return _json_lines(head, events)
    except ValueError:  # a NaN or an infinity somewhere: write it as null
        return _json_lines(head, _safe(events))


def _json_lines(head, events):
    return "".join(
        [
            f'{head}{ts if type(ts) is int else _dumps(ts)}, "data": '
            f"{_dumps(row if type(row) is list else list(row))}}}\n"
            for ts, row in events
        ]
    )


def message_text(message) -> str:
    """A mapped message as text (a key-value map's dicts as JSON objects)."""
    if isinstance(message, str):
        return message
    if isinstance(message, (list, dict)):
        return _dumps(_finite(message))
    return str(message)


def dumps_events(stream, events):
    """A batch as one JSON array of `{"stream","timestamp","data"}` objects (NaN -> null)."""
    items = [{"stream": stream, "timestamp": ts, "data": list(row)} for ts, row in events]
    try:
        return _dumps(items)
    except ValueError:
        return _dumps([{**item, "data": _finite(item["data"])} for item in items])


class Sink:
    """Writes batches of one stream's events somewhere; subclasses set `type`."""

    type = "abstract"
    delivery = "at-least-once"  # publishers/delivery.py; set by build_sink
    dedup = True
    dedup_dropped = 0  # replayed results deduplication kept from this sink (sink_set.py)
    mapper = None  # a cep.mapping OutputMapper when the @sink has a @map

    def __init__(self, stream, options):
        self.stream = stream
        self.options = dict(options or {})
        self.written = 0

    def render_lines(self, events) -> str:
        """The batch as newline-terminated lines: JSON lines, or one mapped message a line."""
        if self.mapper is None:
            return batch_json_lines(self.stream, events)
        return "".join(message_text(m) + "\n" for m in self.mapper.encode(events))

    def messages(self, events) -> list:
        """The batch as transport messages: one per batch when the map groups events (JSON
        array, one <events> document), else one per event; None without a map."""
        if self.mapper is None:
            return None
        if self.mapper.groups:
            return [self.mapper.encode_batch(events)]
        return self.mapper.encode(events)

    def write_batch(self, events):
        """Write `[(ts, row), ...]`; raise SinkWriteError when the destination failed."""
        raise NotImplementedError

    def close(self):
        """Release files, sockets and connections."""

    def dropped_duplicates(self):
        """Replayed results this sink did not write again: the set's deduplication ahead of
        an at-least-once sink, or an exactly-once sink's own (it overrides this)."""
        return self.dedup_dropped

    def describe(self):
        return {
            "type": self.type,
            "stream": self.stream,
            "written": self.written,
            "delivery": self.delivery,
            "dedup_dropped": self.dropped_duplicates(),
        }

    # option helpers
    def option(self, name, default=None, required=False):
        value = self.options.get(name, default)
        if required and value in (None, ""):
            raise SinkConfigError(
                f"@sink(type='{self.type}') on stream {self.stream} needs {name}=..."
            )
        return value

    def int_option(self, name, default):
        raw = self.options.get(name, default)
        try:
            return None if raw is None else int(raw)
        except (TypeError, ValueError):
            raise SinkConfigError(
                f"@sink(type='{self.type}') on stream {self.stream}: "
                f"{name}={raw!r} is not an integer"
            ) from None

    def float_option(self, name, default):
        raw = self.options.get(name, default)
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise SinkConfigError(
                f"@sink(type='{self.type}') on stream {self.stream}: {name}={raw!r} is not a number"
            ) from None
