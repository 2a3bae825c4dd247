"""The offline runner behind `cep run`: a plan over a JSON-lines event file, output as JSON lines.

Input lines: `{"stream": "S", "timestamp": 1000, "data": [...]}`; a line with only
`{"timestamp": T}` advances the playback clock. Output: one object per event inserted into a
stream the input does not feed: `{"stream", "timestamp", "data", "expired"}` (rows inserted
into a stream are current events there, so `expired` is false)."""
import json
from dataclasses import dataclass

from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import EventError, UnknownInputStreamError


@dataclass
class BadLine:
    line: int
    reason: str

    def __str__(self):
        return f"line {self.line}: {self.reason}"


def parse_line(text, lineno):
    """-> ('event', stream, ts, data) | ('clock', ts) | None (blank); raises ValueError."""
    text = text.strip()
    if not text:
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"bad JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(obj, dict):
        raise ValueError("an input line must be a JSON object")
    ts = obj.get("timestamp")
    if ts is not None and (isinstance(ts, bool) or not isinstance(ts, int)):
        raise ValueError(f"timestamp must be an integer (epoch ms), got {ts!r}")
    if "stream" not in obj:
        if ts is None:
            raise ValueError("a line needs \"stream\" and \"data\", or only \"timestamp\"")
        return ("clock", ts)
    data = obj.get("data")
    if not isinstance(data, list):
        raise ValueError(f"\"data\" must be a list of attribute values, got {data!r}")
    return ("event", obj["stream"], ts, tuple(data))


def fed_streams(lines):
    """The stream ids an event file sends to (first pass, tolerant of bad lines)."""
    fed = set()
    for n, text in enumerate(lines, 1):
        try:
            item = parse_line(text, n)
        except ValueError:
            continue
        if item and item[0] == "event":
            fed.add(item[1])
    return fed


def run(plan, lines, emit, on_bad, playback=None, on_error="skip", after_line=None):
    """Run `plan` over input `lines`; `emit(dict)` per output event, `on_bad(BadLine)` per bad
    line, `after_line()` once a line's processing is over. Returns False when stopped by a bad
    line with on_error='fail'."""
    lines = list(lines)
    rt = ExecutionPlanRuntime(plan, playback=playback)
    try:
        outputs = [s for s in rt.junctions if s not in fed_streams(lines)]
        for sid in outputs:
            rt.add_callback(sid, _emitter(sid, emit))
        for n, text in enumerate(lines, 1):
            problem = _feed(rt, text, n)
            if after_line is not None:
                after_line()
            if problem is not None:
                on_bad(BadLine(n, problem))
                if on_error == "fail":
                    return False
        return True
    finally:
        rt.shutdown()


def _emitter(sid, emit):
    def callback(pairs):
        for ts, row in pairs:
            emit({"stream": sid, "timestamp": ts, "data": list(row), "expired": False})
    return callback


def _feed(rt, text, n):
    try:
        item = parse_line(text, n)
    except ValueError as exc:
        return str(exc)
    if item is None:
        return None
    if item[0] == "clock":
        rt.advance_time(item[1])
        return None
    _, stream, ts, data = item
    try:
        rt.input_handler(stream).send(data, ts)
    except (EventError, UnknownInputStreamError) as exc:
        return str(exc)
    except (TypeError, ValueError, ArithmeticError) as exc:  # e.g. incomparable object values
        return f"processing the event failed: {type(exc).__name__}: {exc}"
    return None
