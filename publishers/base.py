"""The sink shape (bytewax's sink partition): write_batch, close, describe; and the JSON form.

An output event is printed as `{"stream": id, "timestamp": ms, "data": [values]}`, one JSON
object a line, exactly as `cep run` prints them."""
import json

from publishers.exceptions import SinkConfigError

_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=True).encode


def event_json(stream, ts, row):
    """One output event as its JSON line (without the newline)."""
    return _dumps({"stream": stream, "timestamp": ts, "data": list(row)})


def batch_json_lines(stream, events):
    """Every event of a batch as JSON lines, newline-terminated (the same text as event_json,
    built without a dict per event)."""
    head = '{"stream": ' + _dumps(stream) + ', "timestamp": '
    return "".join([
        f'{head}{ts if type(ts) is int else _dumps(ts)}, "data": '
        f'{_dumps(row if type(row) is list else list(row))}}}\n' for ts, row in events])


class Sink:
    """Writes batches of one stream's events somewhere; subclasses set `type`."""
    type = "abstract"

    def __init__(self, stream, options):
        self.stream = stream
        self.options = dict(options or {})
        self.written = 0

    def write_batch(self, events):
        """Write `[(ts, row), ...]`; raise SinkWriteError when the destination failed."""
        raise NotImplementedError

    def close(self):
        """Release files, sockets and connections."""

    def describe(self):
        return {"type": self.type, "stream": self.stream, "written": self.written}

    # option helpers
    def option(self, name, default=None, required=False):
        value = self.options.get(name, default)
        if required and value in (None, ""):
            raise SinkConfigError(f"@sink(type='{self.type}') on stream {self.stream} "
                                  f"needs {name}=...")
        return value

    def int_option(self, name, default):
        raw = self.options.get(name, default)
        try:
            return None if raw is None else int(raw)
        except (TypeError, ValueError):
            raise SinkConfigError(f"@sink(type='{self.type}') on stream {self.stream}: "
                                  f"{name}={raw!r} is not an integer") from None

    def float_option(self, name, default):
        raw = self.options.get(name, default)
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise SinkConfigError(f"@sink(type='{self.type}') on stream {self.stream}: "
                                  f"{name}={raw!r} is not a number") from None
