"""The payload mapping of every connector, in a few small functions (one place to switch to a
`@map(type=...)` mapper): a payload in is decoded as the HTTP receiver decodes a body (one
JSON event, a JSON array of events, or JSON lines; each event `{"timestamp", "data"}`, an
attribute object or a positional array), a payload out is one event as the sinks write it
(`{"stream", "timestamp", "data"}`, NaN and infinities as null), or with `per_message` > 1 a
JSON array of such events (what the source side reads back as one batch).

msgspec decodes and encodes (about ten times Python's json here); the events of the common
shape (`{"timestamp": t, "data": [...]}`, no other stream named) go to the router as
`[ts, row]` pairs, the validator's fast path."""
import msgspec

from receivers.http_receiver import parse_body
from receivers.limits import check_depth

MAX_JSON_DEPTH = 32
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


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
        if type(ts) is not int or type(data) is not list or e.get("stream", stream) != stream \
                or len(e) != 2 + ("stream" in e):
            return None
        pairs.append([ts, data])
    return pairs


def encode_events(stream: str, events, per_message: int = 1) -> list:
    """The payloads of a batch of `(ts, row)` output events: one event each, or JSON arrays
    of up to `per_message` events."""
    if per_message <= 1:
        head = b'{"stream":' + _encode(stream) + b',"timestamp":'
        try:
            return [b'%s%d,"data":%s}' % (head, ts, _encode(row if type(row) is list
                                                              else list(row)))
                    if type(ts) is int else encode_event(stream, ts, row) for ts, row in events]
        except TypeError:  # a value msgspec cannot write: the error names it
            return [encode_event(stream, ts, row) for ts, row in events]
    items = [{"stream": stream, "timestamp": ts, "data": list(row)} for ts, row in events]
    return [_encode(items[i:i + per_message]) for i in range(0, len(items), per_message)]


def encode_event(stream: str, ts, row) -> bytes:
    """One output event as a broker message payload."""
    return _encode({"stream": stream, "timestamp": ts, "data": list(row)})
