"""What the worker's HTTP receiver accepts: body size, JSON depth, events per request, tenant
ids, and per-tenant ingest keys; plus JSON error replies for every 4xx/5xx.

`json_depth(data, limit)` measures the nesting of a JSON text without parsing it and without a
Python loop per byte: string contents are dropped (bytes.translate, then a regex only for
strings that hold brackets), then each `replace(b"[]", b"")` pass removes exactly one level
of the innermost brackets."""

import hmac
import logging
import re
from dataclasses import dataclass, field

from flask import jsonify
from werkzeug.exceptions import HTTPException

from receivers.exceptions import BadPayloadError

log = logging.getLogger(__name__)
MIB = 1024 * 1024
TENANT_RE = re.compile(r"-?[0-9]{1,11}")
TENANT_MIN, TENANT_MAX = -(2**31), 2**31 - 1
_KEEP = b'[]{}"'
_MAP = bytes.maketrans(b"{}", b"[]")
_DELETE = bytes(c for c in range(256) if c not in _KEEP)
_STRING = re.compile(rb'"[^"]*"')


@dataclass(frozen=True)
class ReceiverLimits:
    """Caps of one HTTP receiver and its per-tenant ingest keys ({tenant id: key})."""

    max_body_bytes: int = 16 * MIB
    max_json_depth: int = 32
    max_events: int = 100_000
    ingest_keys: dict = field(default_factory=dict)

    @classmethod
    def from_config(cls, cfg):
        """From the worker settings receivers.max_body_bytes, max_json_depth, max_events,
        ingest_keys (`tenant=key` entries)."""
        return cls(
            cfg["receivers.max_body_bytes"],
            cfg["receivers.max_json_depth"],
            cfg["receivers.max_events"],
            parse_ingest_keys(cfg["receivers.ingest_keys"]),
        )


def parse_ingest_keys(entries):
    """{tenant id: key} from `tenant=key` entries; ValueError naming a bad entry (not its key)."""
    keys = {}
    for entry in entries or ():
        tenant, sep, key = str(entry).partition("=")
        if not sep or not key or parse_tenant(tenant.strip()) is None:
            raise ValueError(
                f"receivers.ingest_keys: entry for {tenant.strip()!r} must be "
                f"tenant=key with an integer tenant id and a non-empty key"
            )
        keys[parse_tenant(tenant.strip())] = key
    return keys


def parse_tenant(text):
    """The tenant id of a URL segment (ASCII digits, optional '-', 32-bit), else None."""
    if not isinstance(text, str) or not TENANT_RE.fullmatch(text):
        return None
    value = int(text)
    return value if TENANT_MIN <= value <= TENANT_MAX else None


def presented_key(headers):
    """The ingest key of a request: X-CEP-Ingest-Key, else Authorization: Bearer <key>."""
    key = headers.get("X-CEP-Ingest-Key")
    if key:
        return key
    auth = headers.get("Authorization", "")
    scheme, _, token = auth.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def key_ok(limits, tenant, headers):
    """True when `tenant` needs no key, or the request presents it (constant-time compare)."""
    expected = limits.ingest_keys.get(tenant)
    if expected is None:
        return True
    given = presented_key(headers)
    return given is not None and hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), expected.encode("utf-8")
    )


def json_depth(data, limit):
    """The nesting depth of JSON text `data` (bytes) if at most `limit`, else limit + 1."""
    if b"\\" in data:  # escaped backslashes and quotes must not look like string ends
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = data.translate(_MAP, _DELETE)
    if b'"' in brackets:
        # adjacent quotes are an empty string or two strings side by side (nothing but
        # string content between them): dropping them keeps every structural bracket
        brackets = brackets.replace(b'""', b"")
        if b'"' in brackets:  # strings that hold brackets: drop them with their content
            brackets = _STRING.sub(b"", brackets).replace(b'"', b"")
    depth = 0
    while brackets:
        if depth > limit:
            return limit + 1
        shorter = brackets.replace(b"[]", b"")
        if len(shorter) == len(brackets):
            break  # unbalanced: the parser will say where
        brackets, depth = shorter, depth + 1
    return depth


def check_depth(data, limit):
    if json_depth(data, limit) > limit:
        raise BadPayloadError(f"JSON nests deeper than {limit} levels (receivers.max_json_depth)")


def install_error_handlers(app, limits):
    """Every 4xx/5xx of `app` as JSON `{"error", "message"}`, never an HTML page or a trace."""

    @app.errorhandler(HTTPException)
    def http_error(exc):
        message = exc.description
        if exc.code == 413:
            message = (
                f"request body is larger than {limits.max_body_bytes} bytes "
                f"(receivers.max_body_bytes); send fewer events per request"
            )
        return jsonify({"error": type(exc).__name__, "message": message}), exc.code

    @app.errorhandler(Exception)
    def unexpected(exc):
        log.exception("unexpected error in the HTTP receiver")
        return jsonify(
            {
                "error": "InternalError",
                "message": "internal error; the worker's log has the details",
            }
        ), 500
