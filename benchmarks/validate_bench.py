"""How long the manager takes to answer `POST /api/v1/validate` for plans at its limits, over
HTTP on the production server with authentication on (what a tenant admin can send):

- `sample`: conf/samples/StockAnalysis.siddhiql;
- `20k-queries`: 20,000 one-line queries under the 1 MiB limit (refused by the query scan
  before any parse);
- `1MiB-500-queries`: 1 MiB in 500 queries with long filters (the compile time budget,
  limits.validate_secs, refuses it when it takes longer);
- `60KB-valid`: a valid 60 KB plan (checked in a child process, then compiled).

Prints the median and the slowest of --runs requests each, in seconds.

    .venv/bin/python benchmarks/validate_bench.py --runs 5
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cep.protocol.http_server import ProductionServer  # noqa: E402
from manager.server import Manager  # noqa: E402
from manager.settings import load_manager_settings  # noqa: E402
from manager.web import create_app  # noqa: E402

S = "define stream S (a int, b double);\n"


def filters(queries, terms, name="Big"):
    expr = " or ".join(f"a > {i}" for i in range(terms))
    return f"@Plan:name('{name}')\n{S}" + "".join(
        f"from S[{expr}] select a insert into O{i};\n" for i in range(queries)
    )


def plans():
    many = f"@Plan:name('Many')\n{S}" + "".join(
        f"from S[a > {i}] select a insert into O{i};\n" for i in range(20000)
    )
    at_limit = filters(500, 170)
    while len(at_limit.encode()) > 1024 * 1024:
        at_limit = filters(500, 170 - 10)
    return {
        "sample": (ROOT / "conf/samples/StockAnalysis.siddhiql").read_text(),
        "20k-queries": many,
        "1MiB-500-queries": at_limit,
        "60KB-valid": filters(20, 250),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    os.environ.setdefault("CEP_ADMIN_PASSWORD", "bench-password")
    from manager.testing import FakeLauncher

    manager = Manager(
        load_manager_settings(
            overrides={
                "manager.data_dir": tempfile.mkdtemp(prefix="validate-bench-"),
                "registry.port": 0,
                "registry.bind_host": "127.0.0.1",
                "metrics.sample_interval": 0,
            },
            env={},
        ),
        launcher=FakeLauncher(),
    ).start()
    server = ProductionServer(create_app({"MANAGER": manager}), "127.0.0.1", 0).start()
    token = manager.auth.create_token("admin", "bench")[0]
    try:
        for label, text in plans().items():
            times, answer = [], None
            for _ in range(args.runs):
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
                started = time.perf_counter()
                conn.request(
                    "POST",
                    "/api/v1/validate",
                    text.encode(),
                    {"Authorization": f"Bearer {token}", "Content-Type": "text/plain"},
                )
                answer = json.loads(conn.getresponse().read())
                times.append(time.perf_counter() - started)
                conn.close()
            first = (answer["errors"] or [{}])[0].get("message", "")[:90]
            print(
                f"{label:18s} {len(text.encode()):>9,} bytes  median {statistics.median(times):6.3f} s"
                f"  slowest {max(times):6.3f} s  valid={answer['valid']}  {first}"
            )
    finally:
        server.stop()
        manager.stop()


if __name__ == "__main__":
    main()
