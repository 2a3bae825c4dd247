"""`@map(type='csv')`: delimited lines in and out (the csv module, in C).

Input: every line of a message is one event. Default: the values in the stream's attribute
order; custom: `@attributes(symbol='0', price='2')`, a column position per attribute.
Options: `delimiter` (`,`), `header.present='true'` (skip each message's first line),
`fail.on.unknown.attribute`/`fail.on.missing.attribute` ('true': a line with too few columns
is rejected; 'false': the missing values are null).

Output: one line per event in the stream's order (`header='true'` puts the attribute names
first in a batch); strings with the delimiter or quotes are quoted as the csv module does."""

import csv
import io

from cep.mapping.base import InputMapper, OutputMapper, text_of
from cep.mapping.convert import convert_column, to_text
from cep.mapping.errors import MappingConfigError, PayloadError
from cep.mapping.json_map import attribute_paths
from cep.mapping.spec import MapSpec, Schema


def _delimiter(spec, where):
    d = str(spec.option("delimiter", ","))
    d = {"\\t": "\t", "tab": "\t"}.get(d, d)
    if len(d) != 1:
        raise MappingConfigError(f"{where}: delimiter={d!r} must be one character")
    return d


class CsvInputMapper(InputMapper):
    type = "csv"
    options = (
        "delimiter",
        "header.present",
        "fail.on.unknown.attribute",
        "fail.on.missing.attribute",
        "event.grouping.enabled",
    )

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        self.delimiter = _delimiter(spec, self.where)
        self.header = spec.flag("header.present", False)
        self.fail_missing = spec.flag(
            "fail.on.unknown.attribute", spec.flag("fail.on.missing.attribute", True)
        )
        self.columns = (
            attribute_paths(spec, schema, self.where, self._col)
            if spec.custom
            else list(range(len(schema.names)))
        )
        self.width = max(self.columns) + 1 if self.columns else 0

    def _col(self, value):
        try:
            col = int(str(value).strip())
        except ValueError:
            col = -1
        if col < 0:
            raise MappingConfigError(
                f"{self.where}: attribute mapping {value!r} must be a column position (0, 1, ...)"
            )
        return col

    def _decode(self, payloads):
        lines, owners, numbers, errors = [], [], [], []
        for i, p in enumerate(payloads):
            try:
                text = text_of(p)
            except PayloadError as exc:
                errors.append((i, str(exc)))
                continue
            got = [(n, x) for n, x in enumerate(text.splitlines(), 1) if x.strip()]
            if self.header:
                got = got[1:]
            lines.extend(x for _, x in got)
            numbers.extend(n for n, _ in got)
            owners.extend([i] * len(got))
        records = list(csv.reader(lines, delimiter=self.delimiter))
        keep, bad = [], {}
        for k, rec in enumerate(records):
            if len(rec) < self.width:
                if self.fail_missing:
                    bad[k] = (
                        f"line has {len(rec)} column(s), the mapping reads column {self.width - 1}"
                    )
                    continue
                rec = rec + [None] * (self.width - len(rec))
            keep.append(k)
            records[k] = rec
        cols = [[records[k][c] for k in keep] for c in self.columns]
        conv_bad = {}
        typed = [
            convert_column(col, t, n, conv_bad)
            for col, t, n in zip(cols, self.schema.types, self.schema.names)
        ]
        rows = [r for j, r in enumerate(zip(*typed)) if j not in conv_bad]
        for j, reason in conv_bad.items():
            bad[keep[j]] = reason
        errors.extend((owners[k], f"line {numbers[k]}: {reason}") for k, reason in bad.items())
        errors.sort(key=lambda e: e[0])
        return rows, errors


class CsvOutputMapper(OutputMapper):
    type = "csv"
    options = ("delimiter", "header", "event.grouping.enabled")

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        self.delimiter = _delimiter(spec, self.where)
        self.header = spec.flag("header", False)

    def _lines(self, events):
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=self.delimiter, lineterminator="\n")
        w.writerows([["" if v is None else to_text(v) for v in row] for _t, row in events])
        return buf.getvalue().split("\n")[:-1]

    def encode(self, events) -> list:
        return self._lines(events)

    def encode_batch(self, events) -> str:
        lines = self._lines(events)
        if self.header:
            lines.insert(0, self.delimiter.join(self.schema.names))
        return "\n".join(lines)
