"""What authentication and the HTTP server cost the manager's REST API, measured in one run:
requests/s of `GET /api/v1/tenants/-1234/plans` (a real socket, keep-alive connections; with
--clients N, N of them at once) on the production server (cheroot, what `cep manager` runs)
with security.auth on (a Bearer token: token and user looked up in the file store on every
request), the same on Werkzeug's development server (what ran before), and cheroot with
security.auth off, alternating, medians of --runs runs. Also the cost of one login (scrypt).

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

from cep.protocol.http_server import ProductionServer  # noqa: E402
from manager.server import Manager  # noqa: E402
from manager.settings import load_manager_settings  # noqa: E402
from manager.web import create_app  # noqa: E402
from manager.testing import FakeLauncher  # noqa: E402


def serve(auth, production=True):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": tempfile.mkdtemp(prefix="auth-bench-"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "metrics.sample_interval": 0,
            "security.auth": auth,
        },
        env={},
    )
    manager = Manager(settings, launcher=FakeLauncher()).start()
    app = create_app({"MANAGER": manager})
    if production:
        server = ProductionServer(app, "127.0.0.1", 0).start()
    else:
        server = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
    token = manager.auth.create_token("admin", "bench")[0] if auth else None
    return manager, server, token


def rate(port, token, n, clients=1):
    """Requests/s over `clients` keep-alive connections sending n requests each."""
    if clients > 1:
        done = []
        start = time.perf_counter()
        workers = [
            threading.Thread(target=lambda: done.append(rate(port, token, n)))
            for _ in range(clients)
        ]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return clients * n / (time.perf_counter() - start)
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
    parser.add_argument("--clients", type=int, default=1, help="connections at once")
    args = parser.parse_args()
    import logging
    import os

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    os.environ.setdefault("CEP_ADMIN_PASSWORD", "bench-password")
    on, dev, off = serve(True), serve(True, production=False), serve(False)
    rates = {"cheroot, auth on": [], "werkzeug dev, auth on": [], "cheroot, auth off": []}
    for _ in range(args.runs):
        for label, (_, server, token) in zip(rates, (on, dev, off)):
            rates[label].append(rate(server.server_port, token, args.requests, args.clients))
    logins = [login_secs(on[0], os.environ["CEP_ADMIN_PASSWORD"]) for _ in range(args.runs)]
    med = {label: statistics.median(values) for label, values in rates.items()}
    for label, values in rates.items():
        print(
            f"{label:22s} median {med[label]:8.0f} req/s  "
            f"runs {' '.join(f'{v:.0f}' for v in values)}"
        )
    print(
        f"cheroot / werkzeug (auth on): {med['cheroot, auth on'] / med['werkzeug dev, auth on']:.3f}"
        f"; auth on / off: {med['cheroot, auth on'] / med['cheroot, auth off']:.3f}; "
        f"one login (scrypt): {statistics.median(logins) * 1000:.0f} ms median"
    )
    for manager, server, _ in (on, dev, off):
        (server.stop if hasattr(server, "stop") else server.shutdown)()
        manager.stop()


if __name__ == "__main__":
    main()
