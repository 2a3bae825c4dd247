"""`@map(type='json')`: JSON messages in and out.

Input, default format: `{"event": {"metaData": {...}, "correlationData": {...},
"payloadData": {...}}}` (CEP 4.0; attributes `meta_x`/`correlation_x` come from the first two),
or Siddhi 4's `{"event": {"symbol": ..., ...}}`; a message may be one such object or an array
of them. Custom: `@attributes(symbol='$.stock.sym', ...)` (JSONPath, cep.mapping.jsonpath),
with `enclosing.element='$.portfolio'` selecting the event objects inside each message (an
array's items are events each). `fail.on.missing.attribute='false'` reads a missing value as
null instead of rejecting the event.

Output, default: the CEP 4.0 object per event; a batch is a JSON array of them. Custom:
`@payload('{"quote": {"sym": "{{symbol}}", "price": {{price}}}}')`: values are written as
JSON (strings escaped, without quotes: the template has them). `enclosing.element='name'`
wraps a batch as `{"name": [...]}`."""

import json
import math

import msgspec

from cep.mapping.base import InputMapper, OutputMapper, compile_template, payload_template
from cep.mapping.cep40 import grouped
from cep.mapping.convert import FROM_TEXT, short
from cep.mapping.errors import MappingConfigError, PayloadError
from cep.mapping.jsonpath import JsonPath
from cep.mapping.spec import MapSpec, Schema
from cep.model.types import AttrType

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
_EXACT = {
    AttrType.STRING: "str",
    AttrType.INT: "int",
    AttrType.LONG: "int",
    AttrType.FLOAT: "float",
    AttrType.DOUBLE: "float",
    AttrType.BOOL: "bool",
}


def attribute_paths(spec: MapSpec, schema: Schema, where: str, parse) -> list:
    """`@attributes(...)` as one parsed path per stream attribute, in stream order: keyed
    (`symbol='...'`, every attribute named once) or positional (one per attribute)."""
    keyed = [k for k, _ in spec.attributes if k is not None]
    if keyed and len(keyed) != len(spec.attributes):
        raise MappingConfigError(
            f"{where}: @attributes mixes named and positional values; use one form"
        )
    if not keyed:
        if len(spec.attributes) != len(schema.names):
            raise MappingConfigError(
                f"{where}: @attributes gives {len(spec.attributes)} positional values, stream "
                f"{schema.id} has {len(schema.names)} attributes ({', '.join(schema.names)})"
            )
        return [parse(v) for _, v in spec.attributes]
    by_name = {}
    for k, v in spec.attributes:
        if schema.index(k) < 0:
            raise MappingConfigError(
                f"{where}: @attributes names {k!r}, which stream "
                f"{schema.id} does not have ({', '.join(schema.names)})"
            )
        by_name[k] = parse(v)
    missing = [n for n in schema.names if n not in by_name]
    if missing:
        raise MappingConfigError(
            f"{where}: @attributes does not say where {', '.join(missing)} come(s) from"
        )
    return [by_name[n] for n in schema.names]


class JsonInputMapper(InputMapper):
    type = "json"
    options = ("enclosing.element", "fail.on.missing.attribute")

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        self.fail_missing = spec.flag("fail.on.missing.attribute", True)
        enclosing = spec.option("enclosing.element")
        self.enclosing = JsonPath(enclosing, self.where) if enclosing and enclosing != "$" else None
        if spec.custom:
            self.paths = attribute_paths(
                spec, schema, self.where, lambda v: JsonPath(v, self.where)
            )
            self.default = False
        else:  # CEP 4.0 sections, else Siddhi 4's flat event
            self.paths = [
                JsonPath(f"$.event.{sec}[{inner!r}]")
                for sec, attrs in grouped(schema.names).items()
                for _, inner in attrs
            ]
            order = [i for attrs in grouped(schema.names).values() for i, _ in attrs]
            self.paths = [p for _, p in sorted(zip(order, self.paths), key=lambda x: x[0])]
            self.flat = [JsonPath(f"$.event[{n!r}]") for n in schema.names]
            self.default = True
        self._fast = (
            _generate(self.paths, schema.types) if all(p.simple for p in self.paths) else None
        )

    def _decode(self, payloads):
        items, owner, errors = self._items(payloads)
        if self._fast is not None:
            rows, bad = self._fast(items)
        else:
            rows, bad = [], list(range(len(items)))
        if bad:  # the slow path: the default format's other form, conversions, reasons
            fixed = {}
            for k in bad:
                try:
                    fixed[k] = self._row(items[k])
                except PayloadError as exc:
                    errors.append((owner[k], str(exc)))
            if fixed:
                rows = self._merge(rows, bad, fixed, len(items))
        errors.sort(key=lambda e: e[0])
        return rows, errors

    @staticmethod
    def _merge(rows, bad, fixed, n):
        out, it, bad_set = [], iter(rows), set(bad)
        for k in range(n):
            if k in bad_set:
                if k in fixed:
                    out.append(fixed[k])
            else:
                out.append(next(it))
        return out

    def _items(self, payloads):
        """The event objects of every message, and the message index of each."""
        docs, errors = _parse_all(payloads)
        items, owner = [], []
        for i, doc in docs:
            if self.enclosing is not None:
                found = self.enclosing.all(doc)
                if not found:
                    errors.append(
                        (i, f"no enclosing element {self.enclosing.text} in {short(doc)}")
                    )
                    continue
                doc = found[0] if len(found) == 1 else found
            if type(doc) is list:
                items.extend(doc)
                owner.extend([i] * len(doc))
            else:
                items.append(doc)
                owner.append(i)
        return items, owner, errors

    def _row(self, obj):
        paths = self.paths
        if self.default and not (isinstance(obj, dict) and isinstance(obj.get("event"), dict)):
            raise PayloadError(f'expected {{"event": {{...}}}}, got {short(obj)}')
        if self.default and not any(
            k in obj["event"] for k in ("payloadData", "metaData", "correlationData")
        ):
            paths = self.flat
        row = []
        for path, name, kind in zip(paths, self.schema.names, self.schema.types):
            try:
                v = path.get(obj)
            except KeyError as exc:
                if self.fail_missing:
                    raise PayloadError(f"attribute {name!r}: {exc.args[0]}") from None
                v = None
            if v is not None and kind is not AttrType.OBJECT:
                try:
                    v = FROM_TEXT[kind](v)
                except (TypeError, ValueError):
                    raise PayloadError(
                        f"attribute {name!r} ({kind}): cannot read {short(v)}"
                    ) from None
            row.append(v)
        return tuple(row)


def _parse_all(payloads):
    """[(index, parsed JSON)] and [(index, reason)]: one parse for the whole batch when every
    message is valid JSON, else message by message."""
    if payloads:
        try:
            docs = _decode(b"[" + b",".join(payloads) + b"]")
            if len(docs) == len(payloads):  # else a message held two values: one by one
                return list(enumerate(docs)), []
        except (msgspec.DecodeError, ValueError, TypeError):  # TypeError: not all bytes
            pass
    docs, errors = [], []
    for i, p in enumerate(payloads):
        if isinstance(p, (dict, list)):
            docs.append((i, p))
            continue
        try:
            docs.append((i, _decode(p)))
        except (msgspec.DecodeError, ValueError, TypeError) as exc:
            errors.append((i, f"not JSON: {exc}"))
    return docs, errors


def _generate(paths, types):
    """A loop reading every simple path of every item; items that raise or hold a value of
    another type than the attribute's are left to the slow path (their indexes in `bad`)."""
    exprs = ", ".join(p.python("o") for p in paths) + ("," if len(paths) == 1 else "")
    names = [f"v{i}" for i in range(len(paths))]
    checks = [f"type({n}) is {_EXACT[t]}" for n, t in zip(names, types) if t in _EXACT]
    cond = " and ".join(checks) or "True"
    src = f"""
def fast(items):
    rows = []
    bad = []
    append = rows.append
    for k, o in enumerate(items):
        try:
            {", ".join(names)}{"," if len(names) == 1 else ""} = ({exprs})
        except Exception:
            bad.append(k)
            continue
        if {cond}:
            append(({", ".join(names)}{"," if len(names) == 1 else ""}))
        else:
            bad.append(k)
    return rows, bad
"""
    scope = {}
    exec(compile(src, "<json mapper>", "exec"), scope)
    return scope["fast"]


# ------------------------------------------------------------------------- output
def _json_value(v):
    """A value as JSON text (NaN and infinities as null)."""
    t = type(v)
    if t is str:
        return _encode(v).decode()
    if t is float and not math.isfinite(v):
        return "null"
    try:
        return _encode(v).decode()
    except (TypeError, msgspec.EncodeError):
        return json.dumps(v, default=str)


def _json_in_string(v):
    """A value for a template: strings JSON-escaped without their quotes."""
    if type(v) is str:
        return _encode(v).decode()[1:-1]
    return _json_value(v)


class JsonOutputMapper(OutputMapper):
    type = "json"
    options = ("enclosing.element", "validate.json")

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        template = payload_template(spec, self.where)
        self.enclosing = spec.option("enclosing.element")
        if template is not None:
            self._fill = compile_template(template, schema, _json_in_string, self.where)
            if spec.flag("validate.json", False):
                _check_json_template(self._fill, schema, self.where)
        else:
            self._fill = _default_json(schema)

    def encode(self, events) -> list:
        return self._fill(events)

    def encode_batch(self, events) -> str:
        body = "[" + ",".join(self._fill(events)) + "]"
        if self.enclosing:
            return "{" + _json_value(str(self.enclosing).lstrip("$.")) + ":" + body + "}"
        return body


def _default_json(schema: Schema):
    """The CEP 4.0 object: `{"event":{"metaData":{..},"correlationData":{..},"payloadData":{..}}}`
    as a generated loop (sections without attributes are left out)."""
    sections = []
    for sec, attrs in grouped(schema.names).items():
        fields = ",".join(f"{_encode(inner).decode()}:{{_v(r[{i}])}}" for i, inner in attrs)
        sections.append(f'"{sec}":{{{{{fields}}}}}')
    body = ",".join(sections).replace('"', '\\"')
    src = f'def fill(events):\n    return [f"{{{{\\"event\\":{{{{{body}}}}}}}}}" for _t, r in events]\n'
    scope = {"_v": _json_value}
    exec(compile(src, f"<json default {schema.id}>", "exec"), scope)
    return scope["fill"]


def _check_json_template(fill, schema, where):
    sample = tuple(
        {
            AttrType.STRING: "s",
            AttrType.INT: 1,
            AttrType.LONG: 1,
            AttrType.FLOAT: 1.5,
            AttrType.DOUBLE: 1.5,
            AttrType.BOOL: True,
        }.get(t)
        for t in schema.types
    )
    try:
        json.loads(fill([(0, sample)])[0])
    except ValueError as exc:
        raise MappingConfigError(f"{where}: @payload does not give JSON: {exc}") from None
