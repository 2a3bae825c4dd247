"""Benchmark the console's server side; prints medians, then one JSON line.

    .venv/bin/python benchmarks/console_bench.py [--runs 5] [--requests 20]

The pages and APIs are the real ones (manager.web.create_app over a real manager: store,
compiler, registry table); only the data is made up, and Spark is a fake launcher and a fake
master web UI (/json/), so that nothing but the console's own work is timed.
  plans-page    GET /console/tenants/-1234/plans with 200 deployed plans    target <= 150 ms
  status-page   GET /console/status (and GET /api/v1/status) with 20 workers reporting and 50
                ACTIVE topologies with their registry endpoints and connections  target <= 300 ms
  spark-polls   10 threads poll GET /api/v1/status over HTTP for 5 s; the fake Spark master
                counts the /json/ requests it gets                          target <= 1 req/s
With authentication on, requests carry a console session made by logging in through
the login form, as a browser's do. Each request is timed in-process (Flask test client: the
server's time alone) and over real HTTP on loopback (werkzeug's threaded server, as `cep
manager` runs it). A run's figure is the median of --requests requests after 3 warm-ups; the
printed figure is the median of --runs runs.
"""

import argparse
import json
import os
import platform
import re
import secrets
import statistics
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TENANT = -1234
PASSWORD = os.environ.setdefault("CEP_ADMIN_PASSWORD", secrets.token_urlsafe(16))
os.environ.setdefault("CEP_CLUSTER_SECRET", secrets.token_urlsafe(32))
PLAN = """@Plan:name('{name}')
@Plan:description('Benchmark plan {i}: trades above {limit}')
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('Trades{i}:1.0.0')
define stream Trades{i} (symbol string, price double, volume long);
@Export('Big{i}:1.0.0')
define stream Big{i} (symbol string, price double, volume long);
@info(name='big') @dist(parallel='2')
from Trades{i}[volume > {limit}]
select symbol, price, volume
insert into Big{i};
"""


class FakeSparkMaster:
    """A Spark master web UI serving /json/ (what topology.cluster.master_state reads); records
    the time of every request."""

    def __init__(self, apps=50):
        self.hits, state = [], _master_state(apps)
        body = json.dumps(state).encode()
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                hits.append(time.monotonic())
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _master_state(apps):
    return {
        "url": "spark://127.0.0.1:7077",
        "status": "ALIVE",
        "aliveworkers": 1,
        "cores": 128,
        "coresused": 2 * apps,
        "memory": 65536,
        "memoryused": 1024 * apps,
        "workers": [
            {
                "id": "worker-1",
                "host": "127.0.0.1",
                "state": "ALIVE",
                "cores": 128,
                "coresused": 2 * apps,
            }
        ],
        "activeapps": [
            {
                "id": f"app-2026-{i:04d}",
                "name": f"Plan{i:03d}[{TENANT}]",
                "cores": 2,
                "state": "RUNNING",
                "starttime": 1_700_000_000_000,
            }
            for i in range(apps)
        ],
        "completedapps": [],
    }


class BenchLauncher:
    """Topologies are ACTIVE at once; the cluster is the fake master."""

    def __init__(self, master):
        from topology.cluster import ClusterInfo
        from topology.spark_settings import load_spark_settings

        self.info = ClusterInfo("spark://127.0.0.1:7077", master.url, (), 128, False)
        self.settings = load_spark_settings(
            overrides={"spark.master": "spark://127.0.0.1:7077", "spark.master_ui_url": master.url}
        )
        self.handles = {}

    def submit(self, topology):
        handle = _Handle(topology)
        self.handles[topology.name] = handle
        return handle

    def find(self, name):
        return self.handles.get(name)

    def cluster(self):
        return self.info


class _Handle:
    """A running topology as the driver reports it: status, and metrics of every instance."""

    def __init__(self, topology):
        self.name, self.state, self.started = topology.name, "ACTIVE", time.monotonic()
        self.parallelism = {cid: c.parallelism for cid, c in topology.components.items()}

    def status(self):
        return {
            "name": self.name,
            "status": self.state,
            "reason": "",
            "uptime_s": round(time.monotonic() - self.started, 1),
        }

    def metrics(self):
        from topology.metrics import by_component

        n = int(1000 * (time.monotonic() - self.started))
        instances = [
            {
                "component": cid,
                "index": i,
                "task": k * 10 + i,
                "emitted": n,
                "transferred": n,
                "executed": n,
                "failed": 0,
                "received": n,
                "acked": 0,
                "input_queue_depth": 0,
                "capacity": 0.1,
                "execute_latency_ms": 0.05,
                "sent_to": {},
                "last_error": None,
                "uptime_s": n / 1000,
            }
            for k, (cid, par) in enumerate(self.parallelism.items())
            for i in range(par)
        ]
        return {"status": self.status(), "components": by_component(instances)}

    def kill(self, wait_secs=None):
        self.state = "KILLED"
        return self.status()


def start_manager(data_dir, master, plans):
    """A real manager (files store, registry on a free port) with `plans` deployed plans."""
    from manager.server import Manager
    from manager.settings import load_manager_settings

    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(data_dir),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    m = Manager(settings, launcher=BenchLauncher(master)).start()
    for i in range(plans):
        m.plans.add(TENANT, PLAN.format(name=f"Plan{i:03d}", i=i, limit=100 + i))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(m.plans.status(TENANT, f"Plan{i:03d}")["state"] == "ACTIVE" for i in range(plans)):
            return m
        time.sleep(0.1)
    raise SystemExit("benchmark plans did not become ACTIVE within 60 s")


def fake_workers(m, workers, plans):
    """`workers` workers reporting (worker-info), each plan with a receiver endpoint on one
    worker's spout side and a publisher endpoint on a worker, and their connections."""
    table = m.registry.table
    for w in range(workers):
        wid = f"worker-{w:02d}"
        table.report_worker(
            {
                "worker": wid,
                "host": f"10.0.0.{w + 1}",
                "url": f"http://10.0.0.{w + 1}:9090",
                "roles": ["receiver", "publisher"],
                "plans": [f"{TENANT}/Plan{i:03d}" for i in range(plans) if i % workers == w],
                "machine": [f"10.0.0.{w + 1}"],
                "eventsIn": 1000 * w,
                "eventsOut": 500 * w,
                "memoryRssBytes": 200 << 20,
                "cpuPercent": 12.5,
            }
        )
    for i in range(plans):
        name, w = f"Plan{i:03d}", i % workers
        table.register("receiver", TENANT, name, "127.0.0.1", 20000 + i, streams=[f"Trades{i}"])
        table.register(
            "publisher", TENANT, name, f"10.0.0.{w + 1}", 30000 + i, worker=f"worker-{w:02d}"
        )
        table.connect(
            "receiver",
            TENANT,
            name,
            f"tcp://127.0.0.1:{20000 + i}",
            client=f"worker-{w:02d}",
            stream=f"Trades{i}",
        )
        table.connect(
            "publisher", TENANT, name, f"tcp://10.0.0.{w + 1}:{30000 + i}", client=f"bolt-{i}:0"
        )


def serve(app):
    from receivers.http_receiver import HttpServer

    return HttpServer(app, "127.0.0.1", 0).start()


def sign_in(app, manager):
    """A console session as a browser has one: (test client holding it, headers for HTTP)."""
    client = app.test_client()
    service = getattr(manager, "auth", None)
    if service is None or not service.enabled:
        return client, {}
    form = client.get("/console/login").get_data(as_text=True)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    resp = client.post(
        "/console/login",
        data={"csrf_token": csrf, "user": "admin", "password": PASSWORD, "next": "/console/"},
    )
    assert resp.status_code == 302 and "/login" not in resp.headers["Location"], resp.status_code
    name = app.config["SESSION_COOKIE_NAME"]
    return client, {"Cookie": f"{name}={client.get_cookie(name).value}"}


def timed(fns, requests):
    """Median milliseconds of `requests` calls of each fn, after 3 warm-ups (each must succeed);
    the fns take turns, so that a slower stretch of a shared machine hits them alike."""
    for _ in range(3):
        for fn in fns:
            fn()
    times = [[] for _ in fns]
    for _ in range(requests):
        for fn, out in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1000)
    return [statistics.median(t) for t in times]


def getter_client(client, path):
    def get():
        resp = client.get(path)
        assert resp.status_code == 200, (path, resp.status_code, resp.get_data()[:300])

    return get


def getter_http(url, headers):
    def get():
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=30
        ) as resp:
            assert resp.status == 200
            resp.read()

    return get


def page_times(client, headers, server, paths, requests):
    out = {}
    for label, path in paths.items():
        out[f"{label}_client_ms"], out[f"{label}_http_ms"] = timed(
            [getter_client(client, path), getter_http(server.url + path, headers)], requests
        )
    return out


def spark_polls(server, headers, master, threads=10, secs=5.0):
    """Requests the fake master got while `threads` threads polled /api/v1/status for `secs`."""
    stop, calls, errors = threading.Event(), [0], []
    url = server.url + "/api/v1/status"

    def poll():
        while not stop.is_set():
            try:
                getter_http(url, headers)()
                calls[0] += 1
            except Exception as exc:  # reported, not hidden
                errors.append(repr(exc))

    time.sleep(1.5)  # let the cache of the page runs age out
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as resp:
        status = json.loads(resp.read())
    spark = status.get("spark") or {}
    start = len(master.hits)
    pool = [threading.Thread(target=poll) for _ in range(threads)]
    t0 = time.monotonic()
    for t in pool:
        t.start()
    time.sleep(secs)
    stop.set()
    for t in pool:
        t.join()
    elapsed = time.monotonic() - t0
    hits = master.hits[start:]
    gaps = [b - a for a, b in zip(hits, hits[1:])]
    return {
        "spark_alive": bool(spark.get("alive")),  # the status really reads the master
        "spark_apps_seen": len(spark.get("applications") or []),
        "workers_seen": len(status.get("workers") or []),
        "topologies_seen": len(status.get("topologies") or []),
        "endpoints_seen": len(status.get("endpoints") or []),
        "status_polls": calls[0],
        "master_requests": len(hits),
        "master_req_per_s": len(hits) / elapsed,
        "min_gap_s": min(gaps) if gaps else None,
        "poll_errors": errors[:3],
    }


def one_run(args):
    from manager.web import create_app

    master = FakeSparkMaster(apps=args.topologies)
    with tempfile.TemporaryDirectory() as tmp:
        m = start_manager(Path(tmp) / "plans200", master, args.plans)
        app = create_app({"MANAGER": m})
        server = serve(app)
        client, headers = sign_in(app, m)
        try:
            page = client.get(f"/console/tenants/{TENANT}/plans").get_data(True)
            out = {"plan_rows_seen": page.count('<tr data-plan="Plan')}
            out.update(
                page_times(
                    client,
                    headers,
                    server,
                    {"plans_page": f"/console/tenants/{TENANT}/plans"},
                    args.requests,
                )
            )
        finally:
            server.stop()
            m.stop()
        m = start_manager(Path(tmp) / "status", master, args.topologies)
        fake_workers(m, args.workers, args.topologies)
        app = create_app({"MANAGER": m})
        server = serve(app)
        client, headers = sign_in(app, m)
        try:
            out.update(
                page_times(
                    client,
                    headers,
                    server,
                    {"status_page": "/console/status", "status_api": "/api/v1/status"},
                    args.requests,
                )
            )
            out.update(spark_polls(server, headers, master, args.threads, args.poll_secs))
        finally:
            server.stop()
            m.stop()
    master.stop()
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--requests", type=int, default=20)
    p.add_argument("--plans", type=int, default=200)
    p.add_argument("--workers", type=int, default=20)
    p.add_argument("--topologies", type=int, default=50)
    p.add_argument("--threads", type=int, default=10)
    p.add_argument("--poll-secs", type=float, default=5.0)
    args = p.parse_args(argv)
    import logging

    logging.disable(logging.WARNING)
    runs = []
    for r in range(args.runs):
        runs.append(one_run(args))
        print(
            f"run {r + 1}: "
            + json.dumps(
                {k: round(v, 3) if isinstance(v, float) else v for k, v in runs[-1].items()}
            ),
            flush=True,
        )
    report(args, runs)


def report(args, runs):
    keys = [
        k
        for k, v in runs[0].items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None
    ]
    seen = {
        "plan_rows_seen": args.plans,
        "workers_seen": args.workers,
        "topologies_seen": args.topologies,
    }
    for k, want in seen.items():
        if any(r[k] != want for r in runs):
            print(
                f"WARNING: {k} is {[r[k] for r in runs]}, not {want}: the page was timed "
                "without all of its data"
            )
    if not all(r["spark_alive"] and r["spark_apps_seen"] == args.topologies for r in runs):
        print(
            "WARNING: GET /api/v1/status did not show the fake Spark master as alive with "
            f"{args.topologies} applications: the master_req_per_s figure means nothing"
        )
    med = {k: statistics.median(r[k] for r in runs if r.get(k) is not None) for k in keys}
    targets = {
        "plans_page_client_ms": 150,
        "plans_page_http_ms": 150,
        "status_page_client_ms": 300,
        "status_page_http_ms": 300,
        "status_api_client_ms": 300,
        "status_api_http_ms": 300,
        "master_req_per_s": 1.0,
    }
    print(
        f"\nmedians of {len(runs)} runs ({args.requests} requests each; {args.plans} plans; "
        f"{args.workers} workers, {args.topologies} topologies; {args.threads} pollers)"
    )
    for k in keys:
        target = f"  (target <= {targets[k]})" if k in targets else ""
        ok = "" if k not in targets else ("  ok" if med[k] <= targets[k] else "  OVER")
        print(f"  {k:24s} {med[k]:10.3f}{target}{ok}")
    print(
        json.dumps(
            {
                "bench": "console",
                "runs": len(runs),
                "medians": med,
                "load_avg": os.getloadavg(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
    )


if __name__ == "__main__":
    main()
