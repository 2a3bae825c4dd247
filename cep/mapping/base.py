"""The two mapper shapes every source and sink uses, and what they share.

`InputMapper.decode(payloads)` turns a batch of messages (bytes or str; dicts for key-value)
into `(timestamp_ms, row)` pairs in the stream's attribute order, plus `(index, reason)` for
each message (or event inside one) it could not read: those are counted (`errors`), the
last reasons kept (`recent_errors`) and logged (at most one line a second), and the rest of the
batch goes on. `OutputMapper.encode(events)` gives one message per event,
`encode_batch(events)` one message for the whole batch (a JSON array, one `<events>` document,
lines joined by the text delimiter)."""

import logging
import re
from itertools import repeat
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from cep.mapping.errors import MappingConfigError, PayloadError
from cep.mapping.spec import MapSpec, Schema

log = logging.getLogger("cep.mapping")
MAX_REASONS = 100


@dataclass
class Decoded:
    """What one decode call gave: good (ts, row) pairs and (message index, reason) errors."""

    pairs: list = field(default_factory=list)
    errors: list = field(default_factory=list)


def now_ms() -> int:
    return int(time.time() * 1000)


class InputMapper:
    """Messages -> (ts, row) pairs for one stream. Subclasses implement `_decode_one`
    (one message -> rows, PayloadError when unreadable) and may override `_decode` with a
    whole-batch fast path."""

    type = "?"
    options = ()  # the option keys this type takes (besides the common ones)

    def __init__(self, spec: MapSpec, schema: Schema):
        self.spec, self.schema = spec, schema
        self.events = 0
        self.errors = 0
        self.recent_errors = deque(maxlen=20)
        self._lock = threading.Lock()
        self._last_log = 0.0
        self.where = f"@map(type='{spec.type}') on stream {schema.id}"

    def decode(self, payloads, now=None) -> Decoded:
        """Every message of `payloads` (a sequence) decoded; unreadable ones are counted."""
        payloads = payloads if isinstance(payloads, (list, tuple)) else list(payloads)
        ts = now_ms() if now is None else now
        rows, errors = self._decode(payloads)
        pairs = list(zip(repeat(ts, len(rows)), rows))
        with self._lock:
            self.events += len(pairs)
            if errors:
                self.errors += len(errors)
                self.recent_errors.extend(errors[:20])
        if errors:
            self._log(errors, len(payloads))
        return Decoded(pairs, errors[:MAX_REASONS] if len(errors) > MAX_REASONS else errors)

    def _decode(self, payloads):
        rows, errors = [], []
        for i, p in enumerate(payloads):
            try:
                rows.extend(self._decode_one(p))
            except PayloadError as exc:
                errors.append((i, str(exc)))
            except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
                errors.append((i, f"{type(exc).__name__}: {exc}"))
        return rows, errors

    def _decode_one(self, payload) -> list:
        raise NotImplementedError

    def _log(self, errors, total):
        now = time.monotonic()
        if now - self._last_log >= 1.0:
            self._last_log = now
            log.warning(
                "%s: %d of %d message(s) not read (%d so far); first: #%s %s",
                self.where,
                len(errors),
                total,
                self.errors,
                errors[0][0],
                errors[0][1],
            )

    def describe(self) -> dict:
        return {
            "type": self.spec.type,
            "events": self.events,
            "errors": self.errors,
            "recent_errors": [{"index": i, "reason": r} for i, r in self.recent_errors],
        }


class OutputMapper:
    """(ts, row) events -> messages for one stream. `groups`: a sink may send a batch as
    one `encode_batch` message (False: one `encode` message per event)."""

    type = "?"
    options = ()
    groups = True

    def __init__(self, spec: MapSpec, schema: Schema):
        self.spec, self.schema = spec, schema
        self.where = f"@map(type='{spec.type}') on stream {schema.id}"

    def encode(self, events) -> list:
        """One message per event."""
        raise NotImplementedError

    def encode_batch(self, events):
        """One message holding every event of the batch."""
        raise NotImplementedError


def text_of(payload) -> str:
    """A message as text (UTF-8 bytes decoded; PayloadError when it is not UTF-8)."""
    if type(payload) is str:
        return payload
    if isinstance(payload, (bytes, bytearray, memoryview)):
        try:
            return bytes(payload).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PayloadError(f"message is not UTF-8 text: {exc}") from None
    raise PayloadError(f"expected a text message, got {type(payload).__name__}")


# ------------------------------------------------------------- @payload templates
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def payload_template(spec: MapSpec, where: str):
    """The single `@payload('...')` text of a spec, or None."""
    if not spec.payload:
        return None
    if len(spec.payload) != 1 or spec.payload[0][0] is not None:
        raise MappingConfigError(
            f"{where}: @payload takes one template string, e.g. "
            f"@payload('{{{{symbol}}}} at {{{{price}}}}')"
        )
    return spec.payload[0][1]


def compile_template(template: str, schema: Schema, escape, where: str):
    """A function `events -> [message]` filling `{{attr}}` placeholders with `escape(value)`.

    The loop is generated once per template, so an event costs one f-string."""
    parts, pos, refs = [], 0, []
    for m in _PLACEHOLDER.finditer(template):
        name = m.group(1)
        idx = schema.index(name)
        if idx < 0:
            raise MappingConfigError(
                f"{where}: @payload uses {{{{{name}}}}} but stream "
                f"{schema.id} has ({', '.join(schema.names)})"
            )
        parts.append(template[pos : m.start()])
        refs.append(idx)
        pos = m.end()
    parts.append(template[pos:])
    pieces = []
    for i, lit in enumerate(parts):
        pieces.append(
            lit.replace("\\", "\\\\")
            .replace("{", "{{")
            .replace("}", "}}")
            .replace('"', '\\"')
            .replace("\n", "\\n")
            .replace("\r", "\\r")
        )
        if i < len(refs):
            pieces.append(f"{{_e(r[{refs[i]}])}}")
    body = "".join(pieces)
    src = f'def fill(events):\n    return [f"{body}" for _t, r in events]\n'
    scope = {"_e": escape}
    exec(compile(src, f"<template {schema.id}>", "exec"), scope)
    return scope["fill"]
