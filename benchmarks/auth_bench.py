"""What authentication (issue 10) costs the manager's REST API, measured in one run: requests/s
of `GET /api/v1/tenants/-1234/plans` (a real socket, one keep-alive connection) with
security.auth on (a Bearer token: token and user looked up in the file store on every request)
vs a manager with security.auth off, alternating, medians of --runs runs. Also the cost of one
login (scrypt). The event pipeline is untouched by this part of issue 10 (workers and topologies
authenticate only for plan sync and the registry).

    .venv/bin/python benchmarks/auth_bench.py --runs 5 --requests 2000
"""
import argparse
import http.client
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from werkzeug.serving import make_server  # noqa: E402

from manager.server import Manager  # noqa: E402
from manager.settings import load_manager_settings  # noqa: E402
from manager.web import create_app  # noqa: E402
from tests.manager.manager_fakes import FakeLauncher  # noqa: E402


def serve(auth):
    settings = load_manager_settings(overrides={
        "manager.data_dir": tempfile.mkdtemp(prefix="auth-bench-"), "registry.port": 0,
        "registry.bind_host": "127.0.0.1", "manager.advertised_host": "127.0.0.1",
        "metrics.sample_interval": 0, "security.auth": auth}, env={})
    manager = Manager(settings, launcher=FakeLauncher()).start()
    server = make_server("127.0.0.1", 0, create_app({"MANAGER": manager}), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = manager.auth.create_token("admin", "bench")[0] if auth else None
    return manager, server, token


def rate(port, token, n):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    start = time.perf_counter()
    for _ in range(n):
        conn.request("GET", "/api/v1/tenants/-1234/plans", headers=headers)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
    elapsed = time.perf_counter() - start
    conn.close()
    return n / elapsed


def login_secs(manager, password):
    start = time.perf_counter()
    assert manager.auth.login("admin", password) is not None
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    import logging
    import os
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    os.environ.setdefault("CEP_ADMIN_PASSWORD", "bench-password")
    on, off = serve(True), serve(False)
    rates = {"auth on": [], "auth off": []}
    for _ in range(args.runs):
        rates["auth on"].append(rate(on[1].server_port, on[2], args.requests))
        rates["auth off"].append(rate(off[1].server_port, None, args.requests))
    logins = [login_secs(on[0], os.environ["CEP_ADMIN_PASSWORD"]) for _ in range(args.runs)]
    for label, values in rates.items():
        print(f"{label:9s} median {statistics.median(values):8.0f} req/s  "
              f"runs {' '.join(f'{v:.0f}' for v in values)}")
    ratio = statistics.median(rates["auth on"]) / statistics.median(rates["auth off"])
    print(f"auth on / off: {ratio:.3f}; one login (scrypt): "
          f"{statistics.median(logins) * 1000:.0f} ms median")
    for manager, server, _ in (on, off):
        server.shutdown()
        manager.stop()


if __name__ == "__main__":
    main()
