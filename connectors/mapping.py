"""The payload mapping of every connector, in a few small functions (one place to switch to a
`@map(type=...)` mapper): a payload in is decoded as the HTTP receiver decodes a body (one
JSON event, a JSON array of events, or JSON lines; each event `{"timestamp", "data"}`, an
attribute object or a positional array), a payload out is one event as the sinks write it
(`{"stream", "timestamp", "data"}`, NaN and infinities as null), or with `per_message` > 1 a
JSON array of such events (what the source side reads back as one batch).

msgspec decodes and encodes (about ten times Python's json here); the events of the common
shape (`{"timestamp": t, "data": [...]}`, no other stream named) go to the router as
`[ts, row]` pairs, the validator's fast path."""

from typing import Optional, Union

import msgspec

from receivers.http_receiver import parse_body
from receivers.limits import check_depth

MAX_JSON_DEPTH = 32
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class _Event(msgspec.Struct, forbid_unknown_fields=True):
    """The common shape `{"timestamp": int, "data": [...]}` (with `stream` at most), decoded
    without building a dict: what to_pairs accepts."""

    timestamp: int
    data: list
    stream: Optional[str] = None


_decode_common = msgspec.json.Decoder(Union[_Event, list[_Event]]).decode


def decode_payload(payload: bytes) -> tuple:
    """(events, reasons) of one broker message: the events it holds, and why the parts that
    are not events were left out (a JSON line that is not JSON: its neighbours are kept);
    ValueError (with the reason) for a payload that is none of the JSON forms."""
    if isinstance(payload, str):
        payload = payload.encode()
    if len(payload) > 2 * MAX_JSON_DEPTH:  # shorter text cannot nest deeper than the limit
        try:
            check_depth(payload, MAX_JSON_DEPTH)
        except Exception as exc:  # noqa: BLE001 - BadPayloadError: too deep
            raise ValueError(str(exc)) from None
    try:
        body = _decode(payload)
    except (msgspec.DecodeError, RecursionError):
        events, bad = parse_body(payload)  # JSON lines, or the json module's error message
        if bad:
            return [e for e in events if e is not None], [reason for _, reason in bad]
        return events, []
    if body is None:
        raise ValueError("an empty message (JSON null) holds no event")
    return (body if isinstance(body, list) else [body]), []


def json_batch_decoder(stream: str):
    """The batch decode of a source without a `@map`: `decode(payloads)` -> (events, pairs,
    bad). When every message holds events of the common shape (naming no other stream) the
    events come as `[ts, row]` pairs (`pairs` True, the validator's fast path), decoded in one
    loop without a dict per event; otherwise as JSON events (`pairs` False), each message as
    decode_payload reads it. `bad` holds (message index, reason) of messages left out."""

    def decode(payloads):
        pairs = []
        append = pairs.append
        try:
            for p in payloads:
                if len(p) > 2 * MAX_JSON_DEPTH:
                    check_depth(p if type(p) is not str else p.encode(), MAX_JSON_DEPTH)
                body = _decode_common(p)
                if type(body) is list:
                    for e in body:
                        if e.stream is not None and e.stream != stream:
                            raise ValueError(e.stream)
                        append([e.timestamp, e.data])
                else:
                    if body.stream is not None and body.stream != stream:
                        raise ValueError(body.stream)
                    append([body.timestamp, body.data])
        except Exception:  # noqa: BLE001 - another shape, or a bad message: message by message
            return _decode_each(payloads)
        return pairs, True, []

    return decode


def _decode_each(payloads):
    events, bad = [], []
    for i, p in enumerate(payloads):
        try:
            got, reasons = decode_payload(p)
        except ValueError as exc:
            bad.append((i, str(exc)))
            continue
        events.extend(got)
        bad.extend((i, r) for r in reasons)
    return events, False, bad


def mapped_batch_decoder(mapper):
    """The batch decode of a source with a `@map` (a cep.mapping InputMapper): one mapper
    call per batch; `(ts, row)` pairs and (message index, reason) of what it could not read."""

    def decode(payloads):
        decoded = mapper.decode(payloads)
        return decoded.pairs, True, list(decoded.errors)

    return decode


def mapped_decoder(mapper):
    """A source's decode with a `@map` (cep.mapping InputMapper): one message in, its
    `(ts, row)` pairs and the reasons for what the map could not read out."""

    def decode(payload):
        decoded = mapper.decode([payload])
        return decoded.pairs, [reason for _, reason in decoded.errors]

    return decode


def sink_payloads(sink, events, per_message: int = 1) -> list:
    """The messages of a batch for a broker sink: its `@map`'s (publishers.base.Sink
    .messages), else this system's JSON (`encode_events`)."""
    mapped = sink.messages(events) if getattr(sink, "mapper", None) is not None else None
    if mapped is None:
        return encode_events(sink.stream, events, per_message)
    return [m.encode() if isinstance(m, str) else bytes(m) for m in mapped]


def to_pairs(events: list, stream: str):
    """The events as `[timestamp, row]` pairs when every one has the common shape
    `{"timestamp": int, "data": [...]}` (naming no other stream); None otherwise (the router
    then takes them in any JSON form)."""
    pairs = []
    for e in events:
        if type(e) is not dict or len(e) > 3:
            return None
        ts, data = e.get("timestamp"), e.get("data")
        if (
            type(ts) is not int
            or type(data) is not list
            or e.get("stream", stream) != stream
            or len(e) != 2 + ("stream" in e)
        ):
            return None
        pairs.append([ts, data])
    return pairs


def encode_events(stream: str, events, per_message: int = 1) -> list:
    """The payloads of a batch of `(ts, row)` output events: one event each, or JSON arrays
    of up to `per_message` events."""
    if per_message <= 1:
        head = b'{"stream":' + _encode(stream) + b',"timestamp":'
        try:
            return [
                b'%s%d,"data":%s}' % (head, ts, _encode(row if type(row) is list else list(row)))
                if type(ts) is int
                else encode_event(stream, ts, row)
                for ts, row in events
            ]
        except TypeError:  # a value msgspec cannot write: the error names it
            return [encode_event(stream, ts, row) for ts, row in events]
    items = [{"stream": stream, "timestamp": ts, "data": list(row)} for ts, row in events]
    return [_encode(items[i : i + per_message]) for i in range(0, len(items), per_message)]


def encode_event(stream: str, ts, row) -> bytes:
    """One output event as a broker message payload."""
    return _encode({"stream": stream, "timestamp": ts, "data": list(row)})
