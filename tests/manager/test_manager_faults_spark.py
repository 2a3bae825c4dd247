"""Issue 11 under faults, with the real parts (embedded Spark, ZeroMQ registry, a stand-in CEP
worker's real sockets): a manager restarted on the same data dir and registry port adopts the
running topology (same Spark application, same plan version) while events keep flowing; after
the embedded master and worker are killed and started again, the plan returns to ACTIVE by
itself (no manager restart) and events flow."""

import threading
import time

import pytest

from cep.protocol.frames import encode_batch
from manager.server import Manager
from manager.settings import load_manager_settings
from tests.manager.manager_helpers import free_port, poll
from tests.manager.test_manager_spark import (
    PLAN,
    apps,
    launcher,  # noqa: F401 - a fixture
    next_output,
    stand_in_worker,
    take_output,
    wait_state,
)
from topology.cluster import stop_cluster

pytestmark = pytest.mark.slow


def manager(data_dir, launcher, registry_port):  # noqa: F811 - the fixture's value
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(data_dir),
            "registry.port": registry_port,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "registry.heartbeat_interval": 1.0,
            "topology.kill_wait_secs": 1.0,
            "topology.resubmit_interval": 1.0,
        },
        env={},
    )
    return Manager(settings, launcher=launcher).start()


class Stream(threading.Thread):
    """Sends numbered events (volume > 100: every one is an output) and counts the outputs."""

    def __init__(self, push, pull):
        super().__init__(daemon=True)
        self.push, self.pull, self.sent, self.seen = push, pull, 0, set()
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            batch = [[self.sent + i, ["S", 1.0, 1000 + self.sent + i]] for i in range(50)]
            self.push.send(encode_batch("TradeStream", batch))
            self.sent += 50
            while self.pull.poll(0):
                _, events, _ = take_output(self.pull)  # notices: no events
                self.seen.update(e[1][2] - 1000 for e in events or ())
            time.sleep(0.1)


def test_a_restarted_manager_adopts_the_running_topology(tmp_path, launcher):  # noqa: F811
    port = free_port()
    first = manager(tmp_path / "data", launcher, port)
    first.plans.add(-1234, PLAN)
    wait_state(first, -1234, "Trades", "ACTIVE", timeout=300)
    app = apps(launcher)["Trades[-1234]"]
    version = first.plans.deployments()["plans"][0]["version"]
    reg, pull, push, cid = stand_in_worker(first, -1234, "Trades")
    stream = Stream(push, pull)
    stream.start()
    try:
        poll(lambda: len(stream.seen) > 100, 120, 0.25, "events flow")
        first.stop()  # the registry and the REST side go; the topology keeps running
        during = len(stream.seen)
        second = manager(tmp_path / "data", launcher, port)
        try:
            wait_state(second, -1234, "Trades", "ACTIVE", timeout=120)
            assert apps(launcher)["Trades[-1234]"] == app  # the same Spark application
            assert second.plans.deployments()["plans"][0]["version"] == version
            assert second.topologies.status(-1234, "Trades")["adopted"] is True
            poll(lambda: len(stream.seen) > during + 200, 120, 0.25, "events keep flowing")
        finally:
            stream.stop.set()
            stream.join(5)
            second.plans.remove(-1234, "Trades")
            second.stop()
    finally:
        push.close(0)
        pull.close(0)
        reg.close()


def test_plans_come_back_after_the_master_is_killed_and_started_again(tmp_path, launcher):  # noqa: F811
    m = manager(tmp_path / "data", launcher, free_port())
    try:
        m.plans.add(-1234, PLAN)
        wait_state(m, -1234, "Trades", "ACTIVE", timeout=300)
        old = apps(launcher)["Trades[-1234]"]
        stop_cluster(launcher.settings)  # kills the embedded master and worker
        # seen at once (their pids), resubmitted at once: the submit starts the cluster again
        poll(lambda: m.topologies.recovery.recovered >= 1, 120, 0.25, "a resubmit")
        wait_state(m, -1234, "Trades", "ACTIVE", timeout=300)
        assert apps(launcher)["Trades[-1234]"] != old
        reg, pull, push, _ = stand_in_worker(m, -1234, "Trades")
        try:
            push.send(encode_batch("TradeStream", [[1, ["IBM", 10.0, 500]]]))
            assert next_output(pull) == ("BigTrades", [[1, ["IBM", 10.0, 500]]]), (
                "no output after the master came back"
            )
        finally:
            push.close(0)
            pull.close(0)
            reg.close()
        m.plans.remove(-1234, "Trades")
    finally:
        m.stop()
