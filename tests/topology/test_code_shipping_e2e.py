"""Code shipping on a real two-"machine" Spark cluster (issue 14).

Machine A is this process: a Spark standalone master with no worker, the manager (registry,
plan store, Spark launcher) and a CEP worker with a file sink. Machine B is a Spark worker in
its own network namespace (own address on a veth pair) and mount namespace, where this
checkout, its .venv, /tmp and the base Python's site-packages are empty tmpfs mounts
(tests/topology/nodeb.py). The manager submits the plan with topology.code: auto, which is
ship for a spark:// master: the project goes as a zip (spark.submit.pyFiles) and its
dependencies as a packed environment (spark.archives). The plan must reach ACTIVE there
and its events must reach the worker's sink. A second topology whose executors run a bare
Python (topology.executor_python) must fail at once with a reason naming the missing
modules."""

import json
import os
import time
import urllib.request

import pytest

from manager.launcher import SparkLauncher
from manager.server import Manager
from manager.settings import load_manager_settings
from tests.conftest import IN_CI
from tests.manager.manager_helpers import poll
from tests.topology.nodeb import NodeB, why_not_possible
from topology import Topology
from topology.cluster import _spark_class, _stop_pids, free_port, master_state
from topology.launcher import get_topology, list_topologies, submit

pytestmark = pytest.mark.slow
T = -1234
PLAN = """@Plan:name('Shipped')
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('TradeStream:1.0.0')
define stream TradeStream (symbol string, price double, volume long);
@Export('BigTrades:1.0.0')
define stream BigTrades (symbol string, price double, volume long);
@info(name='big') @dist(parallel='1')
from TradeStream[volume > 100]
select symbol, price, volume
insert into BigTrades;
"""
EVENTS = 40  # every second one has volume > 100: 20 reach the sink


@pytest.fixture(scope="module")
def node_b():
    reason = why_not_possible()
    if reason:
        if IN_CI:
            pytest.fail(f"the code-shipping test needs namespaces: {reason} (CI=true)")
        pytest.skip(f"cannot build machine B here: {reason}")
    node = NodeB(f"{os.getpid() % 100000}").up()
    yield node
    node.down()


@pytest.fixture(scope="module")
def cluster_ab(node_b, tmp_path_factory):
    """A master on A's veth address with no worker; B's worker registers to it."""
    root = tmp_path_factory.mktemp("ship-master")
    host = node_b.host_ip
    port, ui_port = free_port(host), free_port(host)
    master = _spark_class(
        root / "master.log",
        [],
        "org.apache.spark.deploy.master.Master",
        "--host",
        host,
        "--port",
        str(port),
        "--webui-port",
        str(ui_port),
    )
    ui = f"http://{host}:{ui_port}"
    try:
        poll(lambda: master_state(ui), 60, 0.3, "master up")
        assert master_state(ui)["aliveworkers"] == 0  # no other worker: tasks can only run on B
        node_b.start_worker(f"spark://{host}:{port}", root / "worker-b.log", cores=8)
        poll(
            lambda: (master_state(ui) or {}).get("aliveworkers") == 1,
            60,
            0.3,
            f"B's worker registered (log {root / 'worker-b.log'})",
        )
        yield f"spark://{host}:{port}", ui, root
    finally:
        node_b.down()
        _stop_pids((master.pid,))


@pytest.fixture(scope="module")
def system(cluster_ab, node_b, tmp_path_factory):
    master_url, ui, root = cluster_ab
    host = node_b.host_ip
    launcher = SparkLauncher(
        {
            "spark.master": master_url,
            "spark.master_ui_url": ui,
            "spark.host": host,
            "spark.state_dir": str(root / "state"),
            "topology.kill_wait_secs": 1.0,
            "topology.metrics_interval_s": 0.5,
            "checkpoint.interval": 0.0,
        }
    )
    data = tmp_path_factory.mktemp("ship-manager")
    manager = Manager(
        load_manager_settings(
            overrides={
                "manager.data_dir": str(data),
                "registry.port": 0,
                "registry.bind_host": host,
                "manager.advertised_host": host,
                "registry.heartbeat_interval": 1.0,
                "topology.kill_wait_secs": 1.0,
                # B's tasks listen beyond loopback: the manager deploys only with CURVE on
                "security.curve": True,
            },
            env={},
        ),
        launcher=launcher,
    ).start()
    worker = None
    try:
        worker = _worker(manager, host, data)
        yield manager, worker, launcher, data
    finally:
        if worker is not None:
            worker.stop()
        manager.stop(kill_topologies=True)
        for status in list_topologies(launcher.settings):
            get_topology(status["name"], launcher.settings).kill(wait_secs=0, timeout=20)


def _worker(manager, host, data):
    """A CEP worker on A whose publisher endpoint B's publisher bolt reaches (A's address)."""
    import threading

    from werkzeug.serving import make_server

    from cep.worker.config import load_config
    from cep.worker.node import Worker
    from manager.web import create_app

    server = make_server("127.0.0.1", 0, create_app({"MANAGER": manager}), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cfg = load_config(
        path=data / "none.yaml",
        env={},
        overrides={
            "worker.id": "wa",
            "worker.mode": "distributed",
            "worker.advertised_host": host,
            "managers.urls": [f"http://127.0.0.1:{server.server_port}"],
            "managers.poll_interval": 0.2,
            "managers.timeout": 1.0,
            "receivers.http_host": host,
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            "transport.reconnect_interval": 0.1,
            "transport.heartbeat_interval": 0.2,
            "sinks.default": "file",
            "sinks.dir": str(data / "out"),
            "worker.state_dir": str(data / "worker-state"),
            "security.curve": True,
            "security.curve_dir": str(data / "security" / "curve"),
        },
    )
    return Worker(cfg).start()


def test_nothing_of_the_project_is_visible_on_b(node_b):
    probe = node_b.run(
        "sh",
        "-c",
        "find /work /tmp -mindepth 1 | head -3; "
        "test -e /work/main/.venv || echo hidden; "
        "python3.11 -c 'import msgpack' 2>/dev/null && echo leak; true",
    )
    assert probe.stdout.split() == ["hidden"], probe.stdout
    addr = node_b.run("ip", "-4", "-o", "addr")
    assert node_b.node_ip in addr.stdout and node_b.host_ip not in addr.stdout


def test_plan_ships_to_b_runs_active_and_delivers_to_the_sink(system, node_b):
    manager, worker, launcher, data = system
    started = time.monotonic()
    manager.plans.add(T, PLAN)
    poll(
        lambda: manager.plans.status(T, "Shipped")["state"] == "ACTIVE",
        150,
        0.25,
        "Shipped ACTIVE on B",
    )
    active_s = time.monotonic() - started
    name = f"Shipped[{T}]"
    run_dir = get_topology(name, launcher.settings).run_dir
    launch = json.loads((run_dir / "launch.json").read_text())
    assert "topology" in launch["preflight"]["modules"]  # ship mode checks the project too
    status = get_topology(name, launcher.settings).status()
    assert status["status"] == "ACTIVE" and status["restarts"] == 0
    # the executors ran on B (their tasks registered B's address as the spout endpoint)
    endpoint = poll(lambda: _spout_endpoint(manager), 30, 0.25, "spout endpoint")
    assert endpoint.startswith(f"tcp://{node_b.node_ip}:"), endpoint
    accepted = _post_events(worker)
    assert accepted == EVENTS
    rows = poll(lambda: _sink_rows(data, 20), 60, 0.25, "20 events in the worker's file sink")
    assert sorted(r["data"][0] for r in rows) == sorted(f"S{i}" for i in range(1, EVENTS, 2))
    print(f"submit to ACTIVE on B: {active_s:.1f} s")


def test_bare_python_on_b_fails_with_the_missing_modules(system, cluster_ab):
    manager, worker, launcher, data = system
    import sys

    bare = launcher.settings.with_overrides(
        {"topology.executor_python": os.path.realpath(sys._base_executable)}
    )
    t = Topology("Bare[-7]")
    t.add_spout("s", "topology.testing:CounterSpout", outputs=["n"], config={"rate": 10})
    t.add_bolt("c", "topology.testing:CountBolt", inputs={"s": "shuffle"})
    handle = submit(t, bare)
    try:
        status = poll(lambda: _ended(handle), 120, 0.5, "Bare FAILED")
    finally:
        handle.kill(wait_secs=0, timeout=20)
    assert status["status"] == "FAILED"
    reason = status["reason"]
    assert "missing Python modules on executor" in reason, reason
    missing = reason.split(": ", 1)[1].split(" (")[0].split(", ")  # the listed module names
    assert {"msgpack", "zmq", "lark", "numpy"} <= set(missing), reason
    assert "topology" not in missing  # the project itself came with the application's zip
    assert "topology.executor_python" in reason and "Traceback" not in reason
    log = (handle.run_dir / "driver.log").read_text(errors="replace")
    assert "restarting the stage" not in log  # failed once, before any stage: no retry loop


def _ended(handle):
    status = handle.status()
    return status if status["status"] in ("FAILED", "KILLED") else None


def _spout_endpoint(manager):
    from cep.protocol.registry_client import RegistryClient

    try:
        client = RegistryClient(manager.registry_url, security=manager.links)  # CURVE is on
        found = client.lookup("receiver", T, "Shipped", stream="TradeStream")
    except Exception:  # noqa: BLE001 - not registered yet
        return None
    return found and found["endpoint"]


def _post_events(worker):
    lines = [json.dumps({"data": [f"S{i}", 10.0 + i, 200 if i % 2 else 50]}) for i in range(EVENTS)]
    req = urllib.request.Request(
        f"{worker.http_url}/events/{T}/Shipped/TradeStream",
        data="\n".join(lines).encode(),
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())["accepted"]


def _sink_rows(data, want):
    rows = []
    for path in (data / "out").rglob("*"):
        if path.is_file():
            for line in path.read_text().splitlines():
                if line.strip():
                    rows.append(json.loads(line))
    return rows if len(rows) >= want else None
