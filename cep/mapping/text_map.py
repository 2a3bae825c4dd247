"""`@map(type='text')`: text messages in and out.

Input, default format (CEP 4.0): `name:value` pairs separated by commas and line breaks, e.g.
`meta_ts:1500000000000,\\nsymbol:WSO2,\\nprice:55.6`; a value may be quoted (Siddhi 4 writes
`symbol:"WSO2"`). Custom: `regex.A='(\\w+) at ([\\d.]+)'` options and
`@attributes(symbol='A[1]', price='A[2]')`, a regex group per attribute. A message
may hold several events separated by a line that is the `delimiter` (default `~~~~~~~~~~`,
written by sinks with `event.grouping.enabled='true'`). `fail.on.missing.attribute='false'` reads a missing value as null.

Output, default: the same `name:value` lines (CEP 4.0's text publisher). Custom:
`@payload('{{symbol}} traded at {{price}}')`. With `event.grouping.enabled='true'` a batch is
one message, its events joined by delimiter lines; else each event is its own message."""

import re

from cep.mapping.base import InputMapper, OutputMapper, compile_template, payload_template
from cep.mapping.base import text_of
from cep.mapping.convert import convert_value, to_text
from cep.mapping.errors import MappingConfigError, PayloadError
from cep.mapping.json_map import attribute_paths
from cep.mapping.spec import MapSpec, Schema

DELIMITER = "~~~~~~~~~~"
_PAIR_SPLIT = re.compile(r",\s*(?=[A-Za-z_][\w.]*\s*:)")
_REF = re.compile(r"^\s*([A-Za-z_][\w]*)\s*\[\s*(\d+)\s*\]\s*$")


class TextInputMapper(InputMapper):
    type = "text"
    options = (
        "regex.*",
        "fail.on.missing.attribute",
        "event.grouping.enabled",
        "delimiter",
        "new.line.character",
    )

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        self.fail_missing = spec.flag("fail.on.missing.attribute", True)
        self.grouping = spec.flag("event.grouping.enabled", False)
        self.delimiter = str(spec.option("delimiter", DELIMITER))
        # a message holding several events separates them by a line that is the delimiter
        self._split = re.compile(rf"(?m)^[ \t]*{re.escape(self.delimiter)}[ \t]*$")
        self.regexes = {}
        for key, value in spec.options.items():
            if key.startswith("regex."):
                try:
                    self.regexes[key[len("regex.") :].upper()] = re.compile(str(value), re.S)
                except re.error as exc:
                    raise MappingConfigError(
                        f"{self.where}: {key}={value!r} is not a valid regular expression: {exc}"
                    ) from None
        self.refs = attribute_paths(spec, schema, self.where, self._ref) if spec.custom else None
        if not spec.custom:
            self._index = {n: i for i, n in enumerate(schema.names)}

    def _ref(self, value):
        m = _REF.match(str(value))
        if m is None:
            raise MappingConfigError(
                f"{self.where}: attribute mapping {value!r} must be "
                f"'NAME[group]', e.g. 'A[1]' for regex.A's first group"
            )
        name, group = m.group(1).upper(), int(m.group(2))
        rx = self.regexes.get(name)
        if rx is None:
            raise MappingConfigError(
                f"{self.where}: {value!r} names regex.{name}, which is not "
                f"given (regexes: {', '.join(sorted(self.regexes)) or 'none'})"
            )
        if group > rx.groups:
            raise MappingConfigError(
                f"{self.where}: {value!r}: regex.{name} has only {rx.groups} group(s)"
            )
        return name, group

    def _decode_one(self, payload):
        text = text_of(payload).replace("\r", "")
        chunks = (
            [c for c in self._split.split(text) if c.strip()] if self.delimiter in text else [text]
        )
        return [self._custom(c) if self.refs is not None else self._default(c) for c in chunks]

    def _default(self, text):
        row = [None] * len(self.schema.names)
        seen = set()
        for part in _PAIR_SPLIT.split(text.strip()):
            name, sep, value = part.partition(":")
            name = name.strip()
            if not sep:
                raise PayloadError(f"expected name:value, got {part.strip()[:60]!r}")
            i = self._index.get(name)
            if i is None:
                raise PayloadError(
                    f"{name!r} is not an attribute of stream {self.schema.id} "
                    f"({', '.join(self.schema.names)})"
                )
            value = value.strip()
            if value.endswith(","):
                value = value[:-1].rstrip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            kind = self.schema.types[i]
            row[i] = (
                None
                if value == "null" and kind.value != "string"
                else convert_value(value, kind, name)
            )
            seen.add(i)
        if len(seen) < len(row) and self.fail_missing:
            missing = [n for i, n in enumerate(self.schema.names) if i not in seen]
            raise PayloadError(f"no value for {', '.join(missing)}")
        return tuple(row)

    def _custom(self, text):
        matches = {}
        row = []
        for (rx, group), name, kind in zip(self.refs, self.schema.names, self.schema.types):
            if rx not in matches:
                matches[rx] = self.regexes[rx].search(text)
            m = matches[rx]
            value = m.group(group) if m is not None else None
            if value is None:
                if self.fail_missing:
                    raise PayloadError(
                        f"attribute {name!r}: regex.{rx} "
                        f"{'group ' + str(group) + ' ' if m else ''}does not "
                        f"match {text[:60]!r}"
                    )
                row.append(None)
                continue
            row.append(convert_value(value, kind, name))
        return tuple(row)


class TextOutputMapper(OutputMapper):
    type = "text"
    options = ("event.grouping.enabled", "delimiter", "new.line.character")

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        self.delimiter = str(spec.option("delimiter", DELIMITER))
        self.groups = spec.flag("event.grouping.enabled", False)
        template = payload_template(spec, self.where)
        if template is None:
            template = ",\n".join(f"{n}:{{{{{n}}}}}" for n in schema.names)
        self._fill = compile_template(template, schema, to_text, self.where)

    def encode(self, events) -> list:
        return self._fill(events)

    def encode_batch(self, events) -> str:
        return f"\n{self.delimiter}\n".join(self._fill(events))
