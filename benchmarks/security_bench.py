"""What the receivers' input hardening (JSON depth limit, ingest key, NaN-safe JSON) costs, measured in one run (medians of --runs runs):

- `depth`: receivers.limits.json_depth vs json.loads on the same body (1,000 events, ~16 MiB);
- `receiver`: events/s POSTed to the worker's HTTP receiver (a real socket, 1,000-event bodies,
  a no-op deliver) with the default limits and an ingest key vs a receiver built without them
  (no depth check, no key);
- `json`: publishers.base.batch_json_lines (NaN-safe: allow_nan=False, fallback to null) vs
  the previous encoder (allow_nan=True), 1,000-event batches.

    .venv/bin/python benchmarks/security_bench.py --runs 5
"""

import argparse
import http.client
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cep.model import Attribute, AttrType, StreamDefinition  # noqa: E402
from publishers import base  # noqa: E402
from receivers.http_receiver import HttpServer, create_app  # noqa: E402
from receivers.limits import ReceiverLimits, json_depth  # noqa: E402
from receivers.router import IngestRouter  # noqa: E402

STOCK = StreamDefinition(
    "S",
    (
        Attribute("symbol", AttrType.STRING),
        Attribute("price", AttrType.DOUBLE),
        Attribute("volume", AttrType.LONG),
    ),
)


def events(n):
    return [
        {"timestamp": 1_700_000_000_000 + i, "data": [f"S{i % 100}", 100.0 + i % 7, i]}
        for i in range(n)
    ]


def timed(fn, repeat):
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def bench_depth(runs):
    out = {}
    for label, n, repeat in (("1k events", 1000, 200), ("16 MiB", 290_000, 2)):
        body = json.dumps(events(n)).encode()
        depth = [timed(lambda: json_depth(body, 32), repeat) for _ in range(runs)]
        parse = [timed(lambda: json.loads(body), repeat) for _ in range(runs)]
        out[label] = {
            "bytes": len(body),
            "depth_ms": round(statistics.median(depth) * 1e3, 3),
            "parse_ms": round(statistics.median(parse) * 1e3, 3),
        }
    return out


def receiver_rate(limits, headers, n_requests=300):
    router = IngestRouter()
    router.register(("-1234", "P", "S"), STOCK, lambda evs, wait=0.0: 0)
    server = HttpServer(create_app(router, limits=limits)).start()
    body = json.dumps(events(1000)).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port)
    try:
        t0 = time.perf_counter()
        for _ in range(n_requests):
            conn.request("POST", "/events/-1234/P/S", body, headers)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200, resp.status
        return n_requests * 1000 / (time.perf_counter() - t0)
    finally:
        conn.close()
        server.stop()


def bench_receiver(runs):
    import receivers.http_receiver as receiver

    guarded = ReceiverLimits(ingest_keys={-1234: "k" * 32})
    open_ = ReceiverLimits(max_events=10**9)
    check_depth = receiver.check_depth
    on, off = [], []
    for _ in range(runs):  # interleaved, so both see the same machine load
        on.append(receiver_rate(guarded, {"X-CEP-Ingest-Key": "k" * 32}))
        receiver.check_depth = lambda data, limit: None  # the receiver without the depth check
        try:
            off.append(receiver_rate(open_, {}))
        finally:
            receiver.check_depth = check_depth
    return {
        "hardened_ev_s": round(statistics.median(on)),
        "without_ev_s": round(statistics.median(off)),
    }


def bench_json(runs):
    rows = [(1_700_000_000_000 + i, [f"S{i % 100}", 100.0 + i % 7, i]) for i in range(1000)]
    old = json.JSONEncoder(ensure_ascii=False, allow_nan=True).encode

    def previous():  # the encoder before the NaN-safe one, verbatim but for the encoder's name
        head = '{"stream": ' + old("S") + ', "timestamp": '
        return "".join(
            [
                f'{head}{ts if type(ts) is int else old(ts)}, "data": '
                f"{old(row if type(row) is list else list(row))}}}\n"
                for ts, row in rows
            ]
        )

    now = [timed(lambda: base.batch_json_lines("S", rows), 200) for _ in range(runs)]
    before = [timed(previous, 200) for _ in range(runs)]
    return {
        "nan_safe_us_per_batch": round(statistics.median(now) * 1e6, 1),
        "previous_us_per_batch": round(statistics.median(before) * 1e6, 1),
    }


def main(argv=None):
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--stage", choices=["depth", "receiver", "json", "all"], default="all")
    args = ap.parse_args(argv)
    stages = {"depth": bench_depth, "receiver": bench_receiver, "json": bench_json}
    for name, fn in stages.items():
        if args.stage in (name, "all"):
            print(json.dumps({"stage": name, "runs": args.runs, **fn(args.runs)}), flush=True)


if __name__ == "__main__":
    main()
