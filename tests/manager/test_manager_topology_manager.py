"""The topology manager's state machine with a fake launcher: supersede, retry, fail fast,
waiting plans do not block others, kills and endpoint drops."""

import time

import pytest

from manager.registry.table import EndpointTable
from manager.topology_manager import TopologyManager
from tests.manager.manager_fakes import FakeLauncher
from topology.exceptions import BadParallelismError, LaunchError
from topology.model import Topology


def tiny(name):
    t = Topology(name)
    t.add_spout("s", "topology.testing:CounterSpout", outputs=["n"])
    return t


def wait(tm, key, state, timeout=3.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if tm.status(*key)["state"] == state:
            return tm.status(*key)
        time.sleep(0.01)
    pytest.fail(f"{key} is {tm.status(*key)}, not {state}")


def test_waiting_plan_does_not_block_others():
    launcher = FakeLauncher(initial_state="WAITING_FOR_SLOTS")
    tm = TopologyManager(launcher, EndpointTable(), kill_wait_secs=0, resubmit_interval=0.05)
    tm.deploy(1, "A", lambda: tiny("A[1]"), "A[1]")
    wait(tm, (1, "A"), "WAITING_FOR_SLOTS")
    launcher.initial_state = "ACTIVE"
    tm.deploy(2, "B", lambda: tiny("B[2]"), "B[2]")
    wait(tm, (2, "B"), "ACTIVE")
    assert tm.status(1, "A")["state"] == "WAITING_FOR_SLOTS"
    launcher.handles["A[1]"].state = "ACTIVE"  # slots freed: recomputed live
    assert tm.status(1, "A")["state"] == "ACTIVE"
    launcher.handles["A[1]"].state = "FAILED"  # CEP 4.0 never re-checked ACTIVE
    assert tm.status(1, "A")["state"] == "FAILED"


def test_refused_submit_is_retried_and_invalid_topology_fails_at_once():
    launcher = FakeLauncher()
    real_submit, calls = launcher.submit, []

    def flaky(topology):
        calls.append(topology.name)
        if len(calls) < 3:
            raise LaunchError("master unreachable")
        return real_submit(topology)

    launcher.submit = flaky
    tm = TopologyManager(launcher, EndpointTable(), kill_wait_secs=0, resubmit_interval=0.02)
    tm.deploy(1, "A", lambda: tiny("A[1]"), "A[1]")
    wait(tm, (1, "A"), "ACTIVE")
    assert calls == ["A[1]"] * 3

    def invalid():
        raise BadParallelismError("component 's': parallelism must be >= 1", "s", 0)

    tm.deploy(1, "B", invalid, "B[1]")
    status = wait(tm, (1, "B"), "FAILED")
    assert "invalid topology" in status["reason"] and len(calls) == 3


def test_redeploy_cleans_then_supersedes_and_undeploy_drops_endpoints():
    launcher = FakeLauncher()
    table = EndpointTable()
    tm = TopologyManager(launcher, table, kill_wait_secs=0, resubmit_interval=0.02)
    tm.deploy(1, "A", lambda: tiny("A[1]"), "A[1]")
    wait(tm, (1, "A"), "ACTIVE")
    table.register("receiver", 1, "A", "h", 1, streams=["S"])
    table.register("publisher", 1, "A", "h", 2, worker="w1")
    table.connect("publisher", 1, "A", "tcp://h:2", "A[1]:EventPublisherBolt:0")  # killed hard
    tm.deploy(1, "A", lambda: tiny("A[1]"), "A[1]")
    wait(tm, (1, "A"), "ACTIVE")
    assert launcher.killed == ["A[1]"] and len(launcher.submitted) == 2
    # old spouts' endpoints are dropped at CLEANING; the worker's publisher stays
    assert [k[0] for k in table.endpoints] == ["publisher"]
    assert table.connections == {}  # the killed bolt's connection does not count as outflow
    tm.undeploy(1, "A")
    assert launcher.killed == ["A[1]", "A[1]"] and table.endpoints == {}
    assert tm.status(1, "A")["state"] == "UNKNOWN"
