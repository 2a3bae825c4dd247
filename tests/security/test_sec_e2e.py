"""The host policy and the receiver's ingest key on the real distributed system: a manager
(REST over a socket, ZeroMQ registry, embedded Spark) and a CEP worker. A plan whose file
sink names a relative path runs on Spark and its output lands under the tenant's file root;
events without the tenant's ingest key are refused (401) and never reach the sink; a plan that
escapes the roots or posts to the metadata address is refused over REST and never deployed."""

import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.request

import pytest
from werkzeug.serving import make_server

from cep.worker.config import load_config
from cep.worker.node import Worker
from tests.auth_helpers import admin_token, bearer

pytestmark = pytest.mark.slow
TENANT = -1234
PLAN = """@Plan:name('Guarded')
@Plan:playback
@Import('StockStream:1.0.0')
define stream StockStream (symbol string, price double, volume long);
@Export('High:1.0.0')
@sink(type='file', path='alerts/high.jsonl')
define stream High (symbol string, price double);
from StockStream[price > 500.0] select symbol, price insert into High;
"""
EVENTS = [json.loads(x) for x in open("conf/samples/StockStream.jsonl") if x.strip()]
EXPECTED = [[e["data"][0], e["data"][1]] for e in EVENTS if e["data"][1] > 500.0]


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for the Spark end-to-end test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    from manager.launcher import SparkLauncher
    from manager.server import Manager
    from manager.settings import load_manager_settings
    from manager.web import create_app
    from topology.cluster import stop_cluster

    root = tmp_path_factory.mktemp("sec-e2e")
    files = str(root / "files" / "{tenant}")
    launcher = SparkLauncher(
        {
            "spark.state_dir": str(root / "spark"),
            "spark.slots": 4,
            "spark.worker_memory": "2g",
            "spark.host": "127.0.0.1",
            "topology.kill_wait_secs": 1.0,
        }
    )
    m = Manager(
        load_manager_settings(
            overrides={
                "manager.data_dir": str(root / "manager"),
                "registry.port": 0,
                "registry.bind_host": "127.0.0.1",
                "manager.advertised_host": "127.0.0.1",
                "registry.heartbeat_interval": 1.0,
                "topology.kill_wait_secs": 1.0,
                "files.roots": [files],
            },
            env={},
        ),
        launcher=launcher,
    ).start()
    server = make_server("127.0.0.1", 0, create_app({"MANAGER": m}), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    rest_url = f"http://127.0.0.1:{server.server_port}"
    TOKENS[rest_url] = admin_token(m)  # issue 10: authentication on
    worker = Worker(
        load_config(
            path=str(root / "none.yaml"),
            env={},
            overrides={
                "worker.id": "w-sec",
                "managers.urls": [rest_url],
                "managers.registries": [m.registry_url],
                "managers.poll_interval": 0.5,
                "receivers.http_port": 0,
                "receivers.zmq_port": -1,
                "transport.reconnect_interval": 0.2,
                "transport.heartbeat_interval": 1.0,
                "worker.state_dir": str(root / "state"),
                "files.roots": [files],
                "receivers.ingest_keys": [f"{TENANT}=k-123"],
            },
        )
    ).start()
    try:
        yield {"rest": rest_url, "worker": worker, "root": root, "manager": m}
    finally:
        worker.stop()
        server.shutdown()
        m.stop(kill_topologies=True)
        stop_cluster(launcher.settings)


TOKENS = {}  # manager REST URL -> the admin token call() sends there


def call(url, body=None, headers=None, method=None):
    headers = dict(headers or {})
    for base, token in TOKENS.items():
        if url.startswith(base) and "Authorization" not in headers:
            headers.update(bearer(token))
    req = urllib.request.Request(
        url, data=body, headers=headers, method=method or ("POST" if body is not None else "GET")
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_for(cond, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def test_confined_plan_runs_and_guarded_ingest(system):
    rest, worker = system["rest"], system["worker"]
    assert worker.http.host == "127.0.0.1"  # the default bind
    status, body = call(
        f"{rest}/api/v1/tenants/{TENANT}/plans", PLAN.encode(), {"Content-Type": "text/plain"}
    )
    assert status == 201, body

    def connected():
        st = call(f"{rest}/api/v1/tenants/{TENANT}/plans/Guarded/status")[1]
        inflow = (st.get("inflow") or {}).get("w-sec", {})
        return (
            st.get("state") == "ACTIVE"
            and inflow.get("connected") == 1
            and st["outflow"]["connected"] == st["outflow"]["required"]
        )

    wait_for(connected, 180, "the plan ACTIVE with its connections")
    url = f"{worker.http_url}/events/{TENANT}/Guarded/StockStream"
    data = json.dumps(EVENTS).encode()
    assert call(url, data)[0] == 401
    assert call(url, data, {"X-CEP-Ingest-Key": "k-12"})[0] == 401
    status, body = call(url, data, {"Authorization": "Bearer k-123"})
    assert status == 200 and body["accepted"] == len(EVENTS), body
    out = system["root"] / "files" / str(TENANT) / "alerts" / "high.jsonl"

    def rows():
        return [json.loads(x)["data"] for x in out.read_text().splitlines()] if out.exists() else []

    wait_for(lambda: len(rows()) >= len(EXPECTED), 60, f"{len(EXPECTED)} rows in {out}")
    time.sleep(1.0)
    assert rows() == EXPECTED  # exactly once: the refused requests added nothing


@pytest.mark.parametrize(
    "sink",
    [
        "@sink(type='file', path='../../manager/x.jsonl')",
        "@sink(type='http', publisher.url='http://169.254.169.254/')",
    ],
)
def test_escaping_plans_refused_over_rest(system, sink):
    text = PLAN.replace("Guarded", "Escape").replace(
        "@sink(type='file', path='alerts/high.jsonl')", sink
    )
    status, body = call(
        f"{system['rest']}/api/v1/tenants/{TENANT}/plans",
        text.encode(),
        {"Content-Type": "text/plain"},
    )
    assert status == 400 and body["line"] == 6, body
    assert call(f"{system['rest']}/api/v1/tenants/{TENANT}/plans/Escape")[0] == 404
    deployed = call(f"{system['rest']}/api/v1/deployments")[1]["plans"]
    assert "Escape" not in [p["name"] for p in deployed]  # workers never see it
    assert not (system["root"] / "manager" / "x.jsonl").exists()


def test_the_topologys_listeners_are_loopback_and_its_control_needs_the_secret(system):
    """The running Guarded topology (after the test above): its receiver spout listens on
    127.0.0.1 only; a control request without the topology's secret is refused and changes
    nothing; the run dir is 0700 and launch.json 0600."""
    import stat

    import zmq

    from cep.protocol.frames import pack_message, unpack_message

    m = system["manager"]
    handle = m.plans.topologies.deployments[(TENANT, "Guarded")].handle
    spouts = [
        ep
        for ep, _ in m.registry.table.snapshot()
        if ep.get("plan") == "Guarded" and ep.get("kind") == "receiver"
    ]
    assert spouts and all(ep["host"] == "127.0.0.1" for ep in spouts), spouts
    info = json.loads((handle.run_dir / "driver.json").read_text())
    assert stat.S_IMODE(os.stat(handle.run_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(handle.run_dir / "launch.json").st_mode) == 0o600
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(info["control"])
        sock.send(pack_message({"cmd": "deactivate"}))
        assert sock.poll(5000)
        reply = unpack_message(sock.recv())
    finally:
        sock.close()
    assert "control secret" in reply.get("error", ""), reply
    assert handle.status()["status"] == "ACTIVE"  # the launcher's own requests still work


LOOPBACK_IPS = ("127.0.0.1", "::1", "::ffff:127.0.0.1")


def system_processes(root):
    """This process (the manager and the worker run in it), the Spark cluster started for
    `root` (master, worker, executors, Python workers) and their descendants; not other
    children of this test process (another test module's cluster may run beside it)."""
    import psutil

    procs = set()
    for proc in psutil.process_iter(["cmdline"]):
        if str(root) in " ".join(proc.info["cmdline"] or []):
            procs.add(proc)
    for proc in list(procs):
        try:
            procs.update(proc.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
    return {p.pid for p in procs} | {psutil.Process().pid}


def test_every_port_the_running_system_opens_is_loopback(system):
    """The port scan: with CURVE off (the default), every listening socket of the manager,
    the worker, the Spark cluster, the topology's driver, executors and tasks binds a
    loopback address; nothing on the network reaches an unauthenticated listener."""
    import psutil

    pids = system_processes(system["root"])
    listening = [
        (c.laddr.ip, c.laddr.port, c.pid)
        for c in psutil.net_connections("tcp")
        if c.status == psutil.CONN_LISTEN and c.pid in pids
    ]
    assert len({pid for _, _, pid in listening}) >= 4, listening  # test, master, worker, ...
    names = {}
    for ip, port, pid in listening:
        if ip not in LOOPBACK_IPS:
            try:
                names[(ip, port)] = " ".join(psutil.Process(pid).cmdline())[:160]
            except psutil.NoSuchProcess:
                names[(ip, port)] = f"pid {pid}"
    assert not names, f"listeners beyond loopback: {names}"
