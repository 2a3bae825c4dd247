"""Mapper throughput, in events per second of CPU time of this process (one core: the mappers
run on the caller's thread), median of --runs runs of --events events each:

- `json-custom`: `@attributes(symbol='$.stock.sym', price='$.stock.price', ...)` (JSONPath),
  messages of one event each, decoded in batches of --batch messages;
- `json-custom-array`: the same events in one JSON array per batch;
- `xml-custom`: `@attributes(symbol='stock/sym', ...)` (XPath), one event a message;
- `xml-custom-enclosing`: `enclosing.element='/portfolio'`, one document per batch;
- `json-default`, `xml-default`, `text-default`, `csv`: the CEP 4.0 default formats (one
  event a message);
- `json-out`, `xml-out`, `text-out`: output mapping (`encode`, one message per event).

CPU time, not wall time: the machine is shared, and the target is per core.

    .venv/bin/python benchmarks/mapping_bench.py --runs 5
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cep.mapping import MapSpec, Schema, input_mapper, output_mapper  # noqa: E402

SCHEMA = Schema.of(
    (
        "StockStream",
        [("symbol", "string"), ("price", "double"), ("volume", "long"), ("exchange", "string")],
    )
)


def events(n):
    return [
        (
            1700000000000 + k,
            (f"SYM{k % 500}", 10.0 + (k % 1000) / 8, 100 + k % 77, "NYSE" if k % 2 else "NASDAQ"),
        )
        for k in range(n)
    ]


def json_msgs(evs):
    return [
        json.dumps(
            {"stock": {"sym": r[0], "price": r[1], "volume": r[2]}, "market": {"exchange": r[3]}}
        ).encode()
        for _, r in evs
    ]


def xml_msgs(evs):
    return [
        (
            f"<quote><stock><sym>{r[0]}</sym><price>{r[1]}</price><volume>{r[2]}</volume>"
            f"</stock><market>{r[3]}</market></quote>"
        ).encode()
        for _, r in evs
    ]


JSON_CUSTOM = MapSpec(
    "json",
    {},
    (
        ("symbol", "$.stock.sym"),
        ("price", "$.stock.price"),
        ("volume", "$.stock.volume"),
        ("exchange", "$.market.exchange"),
    ),
)
XML_ATTRS = (
    ("symbol", "stock/sym"),
    ("price", "stock/price"),
    ("volume", "stock/volume"),
    ("exchange", "market"),
)


def cases(n, batch):
    evs = events(n)
    jm, xm = json_msgs(evs), xml_msgs(evs)
    chunks = lambda msgs: [msgs[i : i + batch] for i in range(0, len(msgs), batch)]  # noqa
    arrays = [[b"[" + b",".join(c) + b"]"] for c in chunks(jm)]
    portfolios = [[b"<portfolio>" + b"".join(c) + b"</portfolio>"] for c in chunks(xm)]
    out = {}
    for kind in ("json", "xml", "text", "csv"):
        o = output_mapper(MapSpec(kind), SCHEMA)
        out[kind] = [[m.encode() for m in o.encode(evs[i : i + batch])] for i in range(0, n, batch)]
    return {
        "json-custom": (input_mapper(JSON_CUSTOM, SCHEMA), chunks(jm)),
        "json-custom-array": (input_mapper(JSON_CUSTOM, SCHEMA), arrays),
        "xml-custom": (input_mapper(MapSpec("xml", {}, XML_ATTRS), SCHEMA), chunks(xm)),
        "xml-custom-enclosing": (
            input_mapper(MapSpec("xml", {"enclosing.element": "/portfolio"}, XML_ATTRS), SCHEMA),
            portfolios,
        ),
        "json-default": (input_mapper(MapSpec("json"), SCHEMA), out["json"]),
        "xml-default": (input_mapper(MapSpec("xml"), SCHEMA), out["xml"]),
        "text-default": (input_mapper(MapSpec("text"), SCHEMA), out["text"]),
        "csv": (input_mapper(MapSpec("csv"), SCHEMA), out["csv"]),
    }, evs


def run_input(mapper, batches):
    t = time.process_time()
    got = sum(len(mapper.decode(b).pairs) for b in batches)
    return got, time.process_time() - t


def run_output(mapper, evs, batch):
    t = time.process_time()
    for i in range(0, len(evs), batch):
        mapper.encode(evs[i : i + batch])
    return len(evs), time.process_time() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    table, evs = cases(args.events, args.batch)
    print(
        f"{args.events} events, batches of {args.batch}, median of {args.runs} runs "
        f"(events/s of CPU time, one core)"
    )
    for name, (mapper, batches) in table.items():
        rates = []
        for _ in range(args.runs):
            got, secs = run_input(mapper, batches)
            assert got == args.events, (name, got, mapper.recent_errors)
            rates.append(got / secs)
        print(f"  {name:22s} {statistics.median(rates):>12,.0f}")
    for kind in ("json", "xml", "text"):
        mapper = output_mapper(MapSpec(kind), SCHEMA)
        rates = [n / s for n, s in (run_output(mapper, evs, args.batch) for _ in range(args.runs))]
        print(f"  {kind + '-out':22s} {statistics.median(rates):>12,.0f}")


if __name__ == "__main__":
    main()
