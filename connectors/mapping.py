"""The payload mapping of every connector, in two small functions (one place to switch to a
`@map(type=...)` mapper): a payload in is decoded as the HTTP receiver decodes a body (one
JSON event, a JSON array of events, or JSON lines; each event `{"timestamp", "data"}`, an
attribute object or a positional array), a payload out is one event as the sinks write it
(`{"stream", "timestamp", "data"}`, NaN as null)."""
from publishers.base import event_json
from receivers.http_receiver import parse_body
from receivers.limits import check_depth

MAX_JSON_DEPTH = 32


def decode_payload(payload: bytes) -> tuple:
    """(events, reasons) of one broker message: the events it holds, and why the parts that
    are not events were left out (a JSON line that is not JSON: its neighbours are kept);
    ValueError (with the reason) for a payload that is none of the JSON forms."""
    if isinstance(payload, str):
        payload = payload.encode()
    try:
        check_depth(payload, MAX_JSON_DEPTH)
    except Exception as exc:  # noqa: BLE001 - BadPayloadError: too deep
        raise ValueError(str(exc)) from None
    events, bad = parse_body(payload)
    if bad:
        return [e for e in events if e is not None], [reason for _, reason in bad]
    return events, []


def encode_event(stream: str, ts, row) -> bytes:
    """One output event as a broker message payload."""
    return event_json(stream, ts, row).encode()
