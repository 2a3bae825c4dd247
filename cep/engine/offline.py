"""The offline runner behind `cep run`: a plan over a JSON-lines event file, output as JSON lines.

Input lines: `{"stream": "S", "timestamp": 1000, "data": [...]}`; a line with only
`{"timestamp": T}` advances the playback clock. Output: one object per event inserted into a
stream the input does not feed: `{"stream", "timestamp", "data", "expired"}` (rows inserted
into a stream are current events there, so `expired` is false).

The file is read as bytes and run chunk after chunk (about 64 KiB each): a chunk is decoded
in one msgspec call (its newlines turned into commas, as one JSON array) straight into its
streams' row types (a struct per stream, tagged by "stream"), so the rows come out checked;
they become the engine's event tuples and go to `send_events`, and each output batch is
encoded in one msgspec call before the next chunk is decoded. A chunk msgspec refuses (a
clock line, a bad or blank line, a float attribute, ...) is read line by line (msgspec into a
small struct; a line it refuses is read again by `parse_line` for the exact reason) and
checked by the input handler, consecutive events of one stream as one `send_batch` (the same
output as one at a time). Which streams the input feeds is learnt chunk by chunk (`_run`),
so the output and the bad-line reports are written at the end of the run.

Events are sent one at a time where a batch could change the output a file gives: a plan
with a partition (it emits a batch's outputs grouped by key), a stream from which
events reach a stream read by more than one query (each query takes the whole batch in turn,
so their outputs into one stream would no longer interleave per event, and a timer a batch
sets would fire after the other queries saw the later events), an input stream with an
`object` attribute (processing may raise for one event), `--on-error fail` (nothing after
the first bad line may be processed), and events without a timestamp (each takes the clock
at its own send)."""

import gc
import json
import operator
from dataclasses import dataclass
from itertools import groupby
from typing import Callable, Iterable, List, Optional, Tuple, Union

from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import EventError, UnknownInputStreamError
from cep.model import AttrType, Partition

try:
    import msgspec
except ImportError:  # every line then goes through parse_line (the standard json module)
    msgspec = None

BATCH = 1000  # events per send_batch


@dataclass
class BadLine:
    line: int
    reason: str

    def __str__(self):
        return f"line {self.line}: {self.reason}"


def parse_line(text, lineno):
    """-> ('event', stream, ts, data) | ('clock', ts) | None (blank); raises ValueError.
    `text` may be bytes (a line of a file read as bytes) that are not UTF-8: a bad line."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8 text: {exc.reason} at byte {exc.start + 1}") from None
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
            raise ValueError('a line needs "stream" and "data", or only "timestamp"')
        return ("clock", ts)
    data = obj.get("data")
    if not isinstance(data, list):
        raise ValueError(f'"data" must be a list of attribute values, got {data!r}')
    return ("event", obj["stream"], ts, tuple(data))


if msgspec is not None:

    class _Line(msgspec.Struct, gc=False):
        """The common line shapes; anything else (nulls, a missing field, bad types, NaN
        tokens, huge integers) makes the decoder raise and parse_line decides."""

        stream: Union[str, msgspec.UnsetType] = msgspec.UNSET
        timestamp: Union[int, msgspec.UnsetType] = msgspec.UNSET
        data: Union[Tuple, msgspec.UnsetType] = msgspec.UNSET

    _DECODE = msgspec.json.Decoder(_Line).decode
    _ENCODE_LINES = msgspec.json.Encoder().encode_lines
    _UNSET = msgspec.UNSET
    _ERRORS = (msgspec.DecodeError, UnicodeError)


def parse_fast(text, lineno):
    """parse_line's answer, decoding the common shapes in one msgspec call."""
    if msgspec is None:
        return parse_line(text, lineno)
    try:
        ln = _DECODE(text)
    except _ERRORS:
        return parse_line(text, lineno)
    if ln.stream is _UNSET:
        if ln.timestamp is _UNSET or ln.data is not _UNSET:
            return parse_line(text, lineno)
        return ("clock", ln.timestamp)
    if ln.data is _UNSET or ln.timestamp is _UNSET:
        return parse_line(text, lineno)
    return ("event", ln.stream, ln.timestamp, ln.data)


def fed_streams(lines):
    """The stream ids an event file sends to (first pass, tolerant of bad lines)."""
    fed = set()
    for n, text in enumerate(lines, 1):
        try:
            item = parse_fast(text, n)
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


def run_lines(
    plan,
    lines: Iterable[str],
    write: Callable[[str], object],
    on_bad: Callable[[BadLine], object],
    playback: Optional[bool] = None,
    on_error: str = "skip",
    batch: bool = True,
) -> bool:
    """`run`, with the output as JSON text: `write(text)` gets the lines of each output
    batch at once (compact JSON; a batch holding a non-finite double, which JSON has no
    number for, is written by the json module as `NaN`/`Infinity`, as Siddhi's runner does).
    Each item of `lines` is one line (with or without its newline). `batch=False` sends every
    event on its own (the reference the batches must equal)."""
    data = "".join(x if x.endswith("\n") else x + "\n" for x in lines).encode(
        "utf-8", "surrogatepass"
    )
    return run_bytes(
        plan,
        data,
        lambda b: write(b.decode("utf-8", "surrogatepass")),
        on_bad,
        playback,
        on_error,
        batch,
        newlines=False,
    )


def run_bytes(
    plan,
    data: bytes,
    write: Callable[[bytes], object],
    on_bad: Callable[[BadLine], object],
    playback: Optional[bool] = None,
    on_error: str = "skip",
    batch: bool = True,
    newlines: bool = True,
) -> bool:
    """`run_lines` over the bytes of a JSON-lines file (what `cep run` reads): `write(bytes)`
    gets each output batch's UTF-8 JSON lines. Lines end as a text-mode file's do (`\\n`,
    `\\r\\n` or `\\r`; `newlines=False`: only `\\n`); a line that is not UTF-8 is a bad line.
    The garbage collector is paused while the file runs: the decoded events and the engine's
    events are acyclic tuples, and a collection would only rescan them."""
    if newlines and b"\r" in data:  # universal newlines, as the file read as text has them
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    paused = gc.isenabled()
    gc.disable()
    try:
        return _run(plan, data, write, on_bad, playback, on_error, batch)
    finally:
        if paused:
            gc.enable()


def _encoder(sid, write, printed, types):
    """The callback (on the engine's `(ts, row, 0)` tuples) writing a stream's output
    batches, each encoded in one msgspec call; `printed` gets the stream's id. msgspec writes
    NaN and infinities as null: a batch holding one goes through json (`NaN`, `Infinity`).
    The columns of doubles are summed to rule that out (a finite sum: none there); an
    infinite or NaN sum, a null or an object attribute look at the values."""
    floats = [
        operator.itemgetter(i)
        for i, t in enumerate(types)
        if t in (AttrType.DOUBLE, AttrType.FLOAT)
    ]
    anything = AttrType.OBJECT in types

    def finite(batch, text):
        if not anything:
            try:
                for col in floats:
                    total = sum(map(col, map(_ROW, batch)))
                    if total - total != 0.0:
                        break
                else:
                    return True
            except TypeError:  # a null
                pass
        return b"null" not in text or not _nonfinite(batch)

    if msgspec is not None:  # {"stream": sid, ...}: the stream is the struct's tag
        out = msgspec.defstruct(
            f"Out_{sid}",
            [("timestamp", int), ("data", tuple), ("expired", bool, False)],
            tag_field="stream",
            tag=sid,
            gc=False,
        )

    def fn(batch):
        printed.add(sid)
        if msgspec is not None:
            try:
                text = _ENCODE_LINES([out(ts, row) for ts, row, _ in batch])
            except (TypeError, ValueError, OverflowError):
                text = None
            if text is not None and (not (floats or anything) or finite(batch, text)):
                write(text)
                return
        write(
            "".join(
                json.dumps(
                    {"stream": sid, "timestamp": ts, "data": row, "expired": False},
                    separators=(",", ":"),
                    default=str,
                )
                + "\n"  # objects by their Java form
                for ts, row, _ in batch
            ).encode()
        )

    return fn


_ROW = operator.itemgetter(1)


def _nonfinite(batch):
    return any(type(v) is float and (v != v or v in (_INF, -_INF)) for e in batch for v in e[1])


_INF = float("inf")


def batchable(plan, on_error):
    """Whether consecutive events of a stream may go as one send_batch (module docstring)."""
    if on_error == "fail" or any(isinstance(e, Partition) for e in plan.elements):
        return False
    return not any(a.type == AttrType.OBJECT for s in plan.streams for a in s.attributes)


def single_reader(junction, seen=None):
    """Whether every stream that events of `junction` can reach (through the queries'
    insert-into outputs, itself included) is read by at most one query."""
    from cep.engine.junction import CallbackSink
    from cep.engine.output import InsertIntoStream

    seen = set() if seen is None else seen
    if id(junction) in seen:
        return True
    seen.add(id(junction))
    subs = [s for s in junction.subscribers if type(s) is not CallbackSink]
    if len(subs) > 1:
        return False
    stack, visited = list(subs), set()
    while stack:
        p = stack.pop()
        if p is None or id(p) in visited:
            continue
        visited.add(id(p))
        if isinstance(p, InsertIntoStream) and not single_reader(p.junction, seen):
            return False
        stack.extend(getattr(p, a, None) for a in ("next", "owner"))
    return True


class _Restart(Exception):
    """A stream something was printed for turned out to be fed by the input."""


def _run(plan, data, write, on_bad, playback, on_error, batch=True):
    """Run the file chunk after chunk (decoded, sent, its output encoded, then the next: the
    events stay in the CPU caches and CPython's free lists). Which streams the input feeds
    (their events are not printed) is learnt on the way: a stream's callback goes when its
    first input line comes, and as long as nothing was printed for it, the output is what
    knowing it from the start gives. The output and the bad-line reports are held until the
    end: when a stream something was printed for turns out to be fed (also in the rest of
    the file after a stop by --on-error fail), the file is read for its fed streams and run
    again knowing them."""
    ok = batch and batchable(plan, on_error)
    out, bad = [], []
    try:
        return _pass(plan, data, out.append, bad.append, playback, on_error, ok, None)
    except _Restart:
        out.clear()
        bad.clear()
        fed = set()
        for segment in _decode_chunks(plan, data, ok):
            fed |= _chunk_fed(data, *segment)
        return _pass(plan, data, write, on_bad, playback, on_error, ok, fed)
    finally:  # also what came before an error (or Ctrl-C) stopped the run
        for b in bad:
            on_bad(b)
        for text in out:
            write(text)


def _chunk_fed(data, first, start, end, runs):
    return {sid for sid, _ in runs} if runs is not None else fed_streams(_lines(data, start, end))


def _pass(plan, data, write, on_bad, playback, on_error, ok, fed):
    """One run over the file; `fed`: the streams the input feeds, or None to learn them (and
    raise _Restart when that comes too late)."""
    rt = ExecutionPlanRuntime(plan, playback=playback)
    try:
        learn = fed is None
        known = set() if learn else set(fed)
        printed, sinks, batch = set(), {}, set()
        for sid, j in rt.junctions.items():
            if sid not in known:
                rt.add_callback(
                    sid,
                    _encoder(sid, write, printed, [a.type for a in j.definition.attributes]),
                    events=True,
                )
                sinks[sid] = j.subscribers[-1]

        def take(new):
            for sid in new:
                if sid in printed:
                    raise _Restart(sid)
                j = rt.junctions.get(sid)
                if sid in sinks:
                    j.subscribers.remove(sinks.pop(sid))
                known.add(sid)
                if ok and j is not None and single_reader(j):
                    batch.add(sid)

        take(known)
        segments = _decode_chunks(plan, data, ok)
        for first, start, end, runs in segments:
            lines = None
            if learn:
                if runs is not None:
                    new = {sid for sid, _ in runs if sid not in known}
                else:
                    lines = _lines(data, start, end)
                    new = fed_streams(lines) - known
                take(new)
            if runs is not None and all(sid in batch for sid, _ in runs):
                for sid, events in runs:
                    rt.input_handler(sid).send_events(events)
                continue
            # a chunk msgspec refused, or a stream that must go one at a time: its lines
            if lines is None:
                lines = _lines(data, start, end)
            if not _feed_all(rt, lines, on_bad, on_error, batch, first):
                if learn and any(_chunk_fed(data, *s) & printed for s in segments):
                    raise _Restart()
                return False
        return True
    finally:
        rt.shutdown()


def _lines(data, start, end):
    """The lines of data[start:end] (which ends at a line's end) as text; a line that is not
    UTF-8 stays bytes (parse_line reports it)."""
    chunk = data[start:end]
    try:
        lines = chunk.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = [_text(x) for x in chunk.split(b"\n")]
    if chunk.endswith(b"\n"):
        lines.pop()
    return lines


def _text(line):
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line


CHUNK = 64 * 1024  # bytes per decoded chunk (about 700-1,000 events)


def _decode_chunks(plan, data, ok=True):
    """(index of the chunk's first line, start, end, runs) per chunk, decoded as it is asked
    for (`ok` False: the whole file as one chunk to read line by line): the file in chunks of about
    CHUNK bytes ending at a line's end; `runs` is [(stream, [(ts, row, 0), ...]), ...] for a
    chunk decoded whole into checked events, None for a chunk to read line by line. A chunk is
    decoded as one JSON array, its newlines turned into commas (one C pass): a blank line or
    a line with two objects makes it invalid, or gives more events than lines (`{..},{..}`),
    so such a chunk goes line by line."""
    from cep.engine.coerce import row_type

    if not ok or msgspec is None:
        yield 0, 0, len(data), None
        return
    kinds = []
    for s in plan.streams:
        rt = row_type([a.type for a in s.attributes])
        if rt is not None:
            kinds.append(
                msgspec.defstruct(
                    f"Line_{s.id}",
                    [("timestamp", int), ("data", rt)],
                    tag_field="stream",
                    tag=s.id,
                    gc=False,
                )
            )
    if not kinds:
        yield 0, 0, len(data), None
        return
    # with one kind, msgspec would take a line without "stream" as that kind: a second kind
    # that never decodes makes the tag required
    never = msgspec.defstruct(
        "Never", [("timestamp", msgspec.UnsetType)], tag_field="stream", tag="", gc=False
    )
    by_kind = {k: k.__struct_config__.tag for k in kinds}
    decode = msgspec.json.Decoder(List[Union[tuple(kinds) + (never,)]]).decode
    start, first, size = 0, 0, len(data)
    while start < size:
        end = data.find(b"\n", start + CHUNK)
        end = size if end < 0 else end + 1
        stop = end - 1 if data[end - 1] == 10 else end  # without the last newline
        n = data.count(b"\n", start, end) + (stop == end)  # lines
        try:
            items = decode(b"[" + data[start:stop].replace(b"\n", b",") + b"]")
        except _ERRORS:
            items = None
        if items is None or len(items) != n:  # n: a line held two objects and a comma
            yield first, start, end, None
            first += n
        else:
            if len(kinds) == 1:
                runs = [(by_kind[kinds[0]], [(x.timestamp, x.data, 0) for x in items])]
            else:
                runs = [
                    (by_kind[k], [(x.timestamp, x.data, 0) for x in grp])
                    for k, grp in groupby(items, type)
                ]
            yield first, start, end, runs
            first += len(items)
        start = end


def _feed_all(rt, lines, on_bad, on_error, batch, first=0):
    """Feed every line (`first`: the index of the first in the file); consecutive events
    (with timestamps) of one stream of `batch` (a set of stream ids) as one send_batch."""
    pending, stream, numbers = [], None, []
    fail = on_error == "fail"

    def flush():
        if not pending:
            return True
        try:
            bad = rt.input_handler(stream).send_batch(pending)
        except UnknownInputStreamError as exc:
            bad = [(i, exc) for i in range(len(pending))]
        except (TypeError, ValueError, ArithmeticError) as exc:
            bad = [
                (
                    0,
                    f"processing the events of lines {numbers[0]}-{numbers[-1]} failed: "
                    f"{type(exc).__name__}: {exc}",
                )
            ]
        for i, exc in bad:
            on_bad(BadLine(numbers[i], str(exc)))
        pending.clear()
        numbers.clear()
        return not (fail and bad)

    for n, text in enumerate(lines, first + 1):
        try:
            item = parse_fast(text, n)
        except ValueError as exc:
            if not flush():
                return False
            on_bad(BadLine(n, str(exc)))
            if fail:
                return False
            continue
        if item is None:
            continue
        if item[0] == "event" and item[2] is not None and item[1] in batch:
            if item[1] != stream or len(pending) >= BATCH:
                if not flush():
                    return False
                stream = item[1]
            pending.append((item[2], item[3]))
            numbers.append(n)
            continue
        if not flush():
            return False
        try:
            problem = _feed_one(rt, item)
        except (TypeError, ValueError, ArithmeticError) as exc:
            problem = f"processing the event failed: {type(exc).__name__}: {exc}"
        if problem is not None:
            on_bad(BadLine(n, problem))
            if fail:
                return False
    return flush()


def _feed_one(rt, item):
    if item[0] == "clock":
        rt.advance_time(item[1])
        return None
    _, stream, ts, data = item
    try:
        rt.input_handler(stream).send(data, ts)
    except (EventError, UnknownInputStreamError) as exc:
        return str(exc)
    return None  # processing errors (e.g. incomparable object values): the caller's


def _feed(rt, text, n):
    """One input line -> None or the problem (one event at a time)."""
    try:
        item = parse_fast(text, n)
    except ValueError as exc:
        return str(exc)
    if item is None:
        return None
    try:
        return _feed_one(rt, item)
    except (TypeError, ValueError, ArithmeticError) as exc:  # e.g. incomparable object values
        return f"processing the event failed: {type(exc).__name__}: {exc}"
