"""Mappers: messages <-> events, one implementation for every source and sink.

`@source(type='http', @map(type='json', @attributes(symbol='$.stock.sym', ...)))` and
`@sink(type='file', @map(type='xml', @payload('...')))` in Siddhi 4 syntax. Types: json, xml,
text, csv, keyvalue, passThrough (no `@map` means passThrough: this system's own JSON). Without
`@attributes`/`@payload` a type reads and writes the CEP 4.0 default format (see each module).

The whole interface a source or sink needs:

    spec = MapSpec.from_annotation(map_annotation)   # or MapSpec.from_dict(d) (JSON form)
    mapper = input_mapper(spec, definition)          # MappingConfigError when the map is bad
    decoded = mapper.decode([b'...', b'...'])        # Decoded(pairs=[(ts, row)], errors=[(i, why)])
    router.ingest_pairs(key, decoded.pairs)
    out = output_mapper(spec, definition)
    out.encode(events) -> [message per event];  out.encode_batch(events) -> one message

`definition` is a StreamDefinition (or a Schema). Messages are bytes or str (dicts for
keyvalue; keyvalue output gives dicts). A message a mapper cannot read is counted in
`mapper.errors`, its reason kept in `mapper.recent_errors` and logged; the other messages of the
batch are decoded. `check_map(spec, definition, direction)` builds a mapper only to validate it
(used by plan validation). Mappers are not thread-safe for decode state other than counters;
give each source thread its own."""

from cep.mapping.base import Decoded, InputMapper, OutputMapper
from cep.mapping.csv_map import CsvInputMapper, CsvOutputMapper
from cep.mapping.errors import MappingConfigError, PayloadError
from cep.mapping.json_map import JsonInputMapper, JsonOutputMapper
from cep.mapping.keyvalue_map import KeyValueInputMapper, KeyValueOutputMapper
from cep.mapping.passthrough import PassThroughInputMapper, PassThroughOutputMapper
from cep.mapping.spec import MapSpec, Schema, normalize_type
from cep.mapping.text_map import TextInputMapper, TextOutputMapper
from cep.mapping.xml_map import XmlInputMapper, XmlOutputMapper

# type -> (input mapper, output mapper); names as users write them are in MAP_TYPE_NAMES
MAP_TYPES = {
    "json": (JsonInputMapper, JsonOutputMapper),
    "xml": (XmlInputMapper, XmlOutputMapper),
    "text": (TextInputMapper, TextOutputMapper),
    "csv": (CsvInputMapper, CsvOutputMapper),
    "keyvalue": (KeyValueInputMapper, KeyValueOutputMapper),
    "passthrough": (PassThroughInputMapper, PassThroughOutputMapper),
}
MAP_TYPE_NAMES = ("json", "xml", "text", "csv", "keyvalue", "passThrough")
INPUT, OUTPUT = "input", "output"


def _classes(spec: MapSpec):
    kind = normalize_type(spec.type)
    if kind == "map":  # CEP 4.0's name of the key-value mapping
        kind = "keyvalue"
    found = MAP_TYPES.get(kind)
    if found is None:
        raise MappingConfigError(
            f"@map(type='{spec.type}') is not a known map type; known: {', '.join(MAP_TYPE_NAMES)}"
        )
    return found


def unknown_options(spec: MapSpec, direction: str) -> list:
    """Option keys of `spec` its map type does not take in `direction` (input/output)."""
    cls = _classes(spec)[0 if direction == INPUT else 1]
    known = cls.options
    out = []
    for key in spec.options:
        if key in known or any(k.endswith(".*") and key.startswith(k[:-1]) for k in known):
            continue
        out.append(key)
    return out


def known_options(spec: MapSpec, direction: str) -> tuple:
    return _classes(spec)[0 if direction == INPUT else 1].options


def input_mapper(spec: MapSpec, definition) -> InputMapper:
    """The input mapper of `spec` for a stream; MappingConfigError when it cannot be built."""
    spec = spec if isinstance(spec, MapSpec) else MapSpec.from_dict(spec)
    cls = _classes(spec)[0]
    _reject_unknown(spec, INPUT)
    if spec.payload:
        raise MappingConfigError(
            f"@map(type='{spec.type}') on a source takes @attributes, not @payload"
        )
    return cls(spec, Schema.of(definition))


def output_mapper(spec: MapSpec, definition) -> OutputMapper:
    """The output mapper of `spec` for a stream; MappingConfigError when it cannot be built."""
    spec = spec if isinstance(spec, MapSpec) else MapSpec.from_dict(spec)
    cls = _classes(spec)[1]
    _reject_unknown(spec, OUTPUT)
    if spec.attributes:
        raise MappingConfigError(
            f"@map(type='{spec.type}') on a sink takes @payload, not @attributes"
        )
    return cls(spec, Schema.of(definition))


def check_map(spec: MapSpec, definition, direction: str) -> None:
    """Raise MappingConfigError when `spec` cannot map `definition` in `direction`."""
    (input_mapper if direction == INPUT else output_mapper)(spec, definition)


def _reject_unknown(spec, direction):
    bad = unknown_options(spec, direction)
    if bad:
        known = known_options(spec, direction)
        raise MappingConfigError(
            f"@map(type='{spec.type}') on a {'source' if direction == INPUT else 'sink'} has "
            f"no option {bad[0]!r}; its options: {', '.join(known) or 'none'}"
        )


__all__ = [
    "MapSpec",
    "Schema",
    "Decoded",
    "InputMapper",
    "OutputMapper",
    "MappingConfigError",
    "PayloadError",
    "MAP_TYPES",
    "MAP_TYPE_NAMES",
    "input_mapper",
    "output_mapper",
    "check_map",
    "unknown_options",
    "known_options",
    "INPUT",
    "OUTPUT",
]
