"""The manager with the real parts: embedded Spark cluster, ZeroMQ registry, redis-server.

One flow shares the expensive start-ups: deploy to ACTIVE and pass events through the plan
topology between a stand-in CEP worker's sockets; two tenants with the same plan name run two
topologies; a plan that cannot get slots waits (WAITING_FOR_SLOTS) without blocking others and
deploys when slots free up; edit passes CLEANING/DEPLOYING to a new ACTIVE topology; remove
makes the Spark application disappear; a manager restarted on the Redis store keeps and
redeploys its plans (the edited text, killing the topology the first manager left running)."""

import os
import shutil
import sys
import threading
import time
import traceback

import pytest
import zmq

from cep.security import curve
from manager.launcher import SparkLauncher
from cep.protocol.registry_client import RegistryClient
from cep.protocol.frames import decode_output, encode_batch
from manager.server import Manager
from manager.settings import load_manager_settings
from tests.manager.manager_helpers import poll
from topology.cluster import master_state, stop_cluster
from topology.launcher import get_topology, list_topologies

pytestmark = pytest.mark.slow
SLOTS = 8
PLAN = """@Plan:name('Trades')
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
WIDE = PLAN.replace("Trades')", "Wide')").replace("parallel='1')\nfrom", "parallel='3')\nfrom")


@pytest.fixture(scope="module")
def launcher(tmp_path_factory):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for the manager's Spark tests (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    launcher = SparkLauncher(
        {
            "spark.state_dir": str(tmp_path_factory.mktemp("mgr-spark")),
            "spark.slots": SLOTS,
            "spark.worker_memory": "4g",
            "spark.host": "127.0.0.1",
            "topology.kill_wait_secs": 1.0,
            "topology.metrics_interval_s": 0.5,
        }
    )
    launcher.cluster()
    yield launcher
    kill_all_topologies(launcher)
    stop_cluster(launcher.settings)


def kill_all_topologies(launcher):
    """Kill every topology still running in the launcher's state_dir (a failed test leaves
    them behind, and a driver outlives the cluster: they used to stay running after the
    session), then check that none is left."""
    for status in list_topologies(launcher.settings):
        get_topology(status["name"], launcher.settings).kill(wait_secs=0, timeout=30)
    left = [s["name"] for s in list_topologies(launcher.settings)]
    assert left == [], f"topologies still running after kill: {left}"


def new_manager(tmp_path, redis_url, launcher):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path),
            "store.redis_url": redis_url,
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "registry.heartbeat_interval": 1.0,
            "topology.kill_wait_secs": 1.0,
            "topology.resubmit_interval": 1.0,
        },
        env={},
    )
    return Manager(settings, launcher=launcher).start()


def apps(launcher):
    state = master_state(launcher.cluster().ui_url) or {}
    return {a["name"]: a["id"] for a in state.get("activeapps", [])}


def wait_state(manager, tenant, name, state, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if manager.plans.status(tenant, name)["state"] == state:
            return
        time.sleep(0.25)
    stacks = "\n".join(
        f"--- {t.name}\n" + "".join(traceback.format_stack(sys._current_frames()[t.ident]))
        for t in threading.enumerate()
        if t.name.startswith("deploy")
    )
    pytest.fail(
        f"{name}[{tenant}] not {state} within {timeout} s: "
        f"{manager.plans.status(tenant, name)}\n{stacks}"
    )


class StateRecorder(threading.Thread):
    """Records every distinct state a plan's status passes through."""

    def __init__(self, manager, tenant, name):
        super().__init__(daemon=True)
        self.manager, self.key, self.seen, self.stop = (
            manager,
            (tenant, name),
            [],
            threading.Event(),
        )

    def run(self):
        while not self.stop.is_set():
            state = self.manager.plans.status(*self.key)["state"]
            if not self.seen or self.seen[-1] != state:
                self.seen.append(state)
            time.sleep(0.05)


def stand_in_worker(manager, tenant, plan):
    """A CEP worker's two sides: a registered publisher ROUTER socket (next_output reads and
    acknowledges its frames, as a worker's publisher service), a PUSH to the spout."""
    ctx = zmq.Context.instance()
    pull = ctx.socket(zmq.ROUTER)
    pull.setsockopt(zmq.LINGER, 0)
    if manager.plans.publisher_auth == "token":  # as a worker's publisher port: the plan's token
        curve.plain_server(
            pull,
            ctx,
            f"publisher/{tenant}/{plan}",
            curve.plan_token(manager.auth.cluster_secret, tenant, plan),
        )
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    reg = RegistryClient(manager.registry_url)
    reg.register("publisher", tenant, plan, "127.0.0.1", port, worker="worker-1")
    ep = poll(lambda: _lookup(reg, tenant, plan), 60, 0.25, "receiver spout registered")
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(ep["endpoint"])
    cid = reg.connect("receiver", tenant, plan, ep["endpoint"], "worker-1", "TradeStream")
    return reg, pull, push, cid


def take_output(pull):
    """One frame from the stand-in publisher socket, acknowledged (as a worker's publisher
    service does once its sinks took it), decoded: (stream or None, events, identity)."""
    peer, number, frame = pull.recv_multipart()
    pull.send_multipart([peer, number])
    return decode_output(frame)


def next_output(pull, timeout_ms=60000):
    """The next data frame from the publisher bolts as (stream, [[ts, [values]], ...]), past
    their start/commit notices (frames v4, issue 11); None when none came in time."""
    deadline = time.monotonic() + timeout_ms / 1000
    while pull.poll(max(0, int((deadline - time.monotonic()) * 1000))):
        stream, events, _ = take_output(pull)
        if stream is not None:
            return stream, [[ts, list(values)] for ts, values in events]
    return None


def _lookup(reg, tenant, plan):
    try:
        return reg.lookup("receiver", tenant, plan, stream="TradeStream")
    except Exception:  # noqa: BLE001 - not registered yet
        return None


def test_manager_on_spark(tmp_path, redis_db, launcher):
    manager = new_manager(tmp_path, redis_db, launcher)
    try:
        _deploy_and_flow(manager)
        _tenants_slots_and_remove(manager, launcher)
        _edit(manager, launcher)
        manager.plans.remove(-1234, "Wide")
        left_running = apps(launcher)["Trades[-1234]"]
    finally:
        manager.stop(kill_topologies=False)
    restarted = new_manager(tmp_path, redis_db, launcher)
    try:
        assert [p["name"] for p in restarted.plans.list(-1234)] == ["Trades"]
        assert "volume > 1000" in restarted.plans.show(-1234, "Trades")["text"]
        wait_state(restarted, -1234, "Trades", "ACTIVE")
        # issue 11: a restarted manager adopts the topology it left running (same plan text):
        # the same Spark application, not a kill and a redeploy
        assert apps(launcher)["Trades[-1234]"] == left_running
        assert restarted.plans.topologies.status(-1234, "Trades")["adopted"] is True
    finally:
        restarted.plans.remove(-1234, "Trades")
        restarted.stop()
    poll(lambda: "Trades[-1234]" not in apps(launcher), 60, 0.5, "app gone")


def _deploy_and_flow(manager):
    manager.plans.add(-1234, PLAN)
    wait_state(manager, -1234, "Trades", "ACTIVE")
    reg, pull, push, cid = stand_in_worker(manager, -1234, "Trades")
    try:
        push.send(
            encode_batch(
                "TradeStream",
                [[1, ["IBM", 10.0, 500]], [2, ["X", 1.0, 5]], [3, ["WSO2", 2.5, 101]]],
            )
        )
        assert next_output(pull) == (
            "BigTrades",
            [[1, ["IBM", 10.0, 500]], [3, ["WSO2", 2.5, 101]]],
        ), "no output from the plan topology"
        status = manager.plans.status(-1234, "Trades")
        assert status["inflow"]["worker-1"]["text"] == "1/1 established"
        assert status["outflow"]["text"] == "1/1 established"
        reg.release(cid)
        assert (
            manager.plans.status(-1234, "Trades")["inflow"]["worker-1"]["text"] == "0/1 established"
        )
    finally:
        push.close(0)
        pull.close(0)
        reg.close()


def _tenants_slots_and_remove(manager, launcher):
    manager.plans.add(7, PLAN)
    wait_state(manager, 7, "Trades", "ACTIVE")
    assert {"Trades[-1234]", "Trades[7]"} <= set(apps(launcher))
    manager.plans.add(-1234, WIDE)  # 5 tasks, 2 slots free: waits
    wait_state(manager, -1234, "Wide", "WAITING_FOR_SLOTS")
    assert manager.plans.status(7, "Trades")["state"] == "ACTIVE"
    manager.plans.remove(7, "Trades")
    assert "Trades[7]" not in apps(launcher)
    wait_state(manager, -1234, "Wide", "ACTIVE")


def _edit(manager, launcher):
    old_app = apps(launcher)["Trades[-1234]"]
    recorder = StateRecorder(manager, -1234, "Trades")
    recorder.start()
    manager.plans.edit(-1234, "Trades", PLAN.replace("volume > 100", "volume > 1000"))
    wait_state(manager, -1234, "Trades", "ACTIVE")
    recorder.stop.set()
    recorder.join()
    seen = recorder.seen + ["ACTIVE"]  # wait_state saw the final ACTIVE
    assert seen[0] == "ACTIVE"
    assert "CLEANING" in seen and "DEPLOYING" in seen
    assert seen.index("CLEANING") < seen.index("DEPLOYING")
    new_app = apps(launcher)["Trades[-1234]"]
    assert new_app != old_app
