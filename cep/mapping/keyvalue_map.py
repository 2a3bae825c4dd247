"""`@map(type='keyvalue')` (CEP 4.0's `map` mapping): flat key-value messages in and out.

Input: a dict (Redis stream fields, a JMS MapMessage), or a flat JSON object as text. Default:
the keys are the attribute names; custom: `@attributes(symbol='sym', price='p')` names the key
of each attribute. String values are converted to the attribute types. Output: one dict per
event; `@payload(sym='symbol', p='{{price}}')` names the key of each attribute (default: the
attribute names)."""

import msgspec

from cep.mapping.base import InputMapper, OutputMapper, text_of
from cep.mapping.convert import convert_value, short
from cep.mapping.errors import MappingConfigError, PayloadError
from cep.mapping.json_map import attribute_paths
from cep.mapping.spec import MapSpec, Schema

_decode = msgspec.json.Decoder().decode


class KeyValueInputMapper(InputMapper):
    type = "keyvalue"
    options = ("fail.on.missing.attribute",)

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        self.fail_missing = spec.flag("fail.on.missing.attribute", True)
        self.keys = (
            attribute_paths(spec, schema, self.where, str) if spec.custom else list(schema.names)
        )

    def _decode_one(self, payload):
        if isinstance(payload, dict):
            obj = payload
        else:
            try:
                obj = _decode(text_of(payload))
            except msgspec.DecodeError as exc:
                raise PayloadError(f"not a key-value message (a flat JSON object): {exc}") from None
            if not isinstance(obj, dict):
                raise PayloadError(f"expected a flat JSON object, got {short(obj)}")
        row = []
        for key, name, kind in zip(self.keys, self.schema.names, self.schema.types):
            v = obj.get(key)
            if v is None and isinstance(key, str):
                v = obj.get(key.encode()) if any(type(k) is bytes for k in obj) else None
            if v is None:
                if key not in obj and self.fail_missing:
                    raise PayloadError(f"attribute {name!r}: no key {key!r}")
                row.append(None)
                continue
            if type(v) is bytes:
                v = v.decode("utf-8", "replace")
            row.append(convert_value(v, kind, name))
        return [tuple(row)]


class KeyValueOutputMapper(OutputMapper):
    type = "keyvalue"

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        if spec.payload:
            pairs = []
            for key, value in spec.payload:
                attr = str(value).strip()
                if attr.startswith("{{") and attr.endswith("}}"):
                    attr = attr[2:-2].strip()
                if key is None or schema.index(attr) < 0:
                    raise MappingConfigError(
                        f"{where(self)}: @payload must map keys to attributes, e.g. "
                        f"@payload(sym='symbol'); {key}={value!r} does not name an attribute "
                        f"of {schema.id} ({', '.join(schema.names)})"
                    )
                pairs.append((key, schema.index(attr)))
        else:
            pairs = [(n, i) for i, n in enumerate(schema.names)]
        self.pairs = pairs

    def encode(self, events) -> list:
        pairs = self.pairs
        return [{k: row[i] for k, i in pairs} for _t, row in events]

    def encode_batch(self, events) -> list:
        return self.encode(events)


def where(mapper):
    return mapper.where
