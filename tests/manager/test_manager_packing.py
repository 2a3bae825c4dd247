"""Where each plan runs (issue 14): the manager's plan status names the Spark application, a
shared one or the plan's own, and passes a shared plan's WAITING_FOR_SLOTS on with its
reason (not FAILED, not a hang); with a fake launcher."""

import time

import pytest

from manager.registry.table import EndpointTable
from manager.topology_manager import TopologyManager
from tests.manager.manager_fakes import FakeHandle, FakeLauncher
from topology.model import Topology

REASON = (
    "needs 2 free slots in the shared application cep-pool[1]; it has 4, 1 free; it "
    "starts when another topology of the application ends"
)


class SharedHandle(FakeHandle):
    def status(self):
        out = {
            **super().status(),
            "packing": "shared",
            "application": "cep-pool[1]",
            "app_id": "app-7",
            "workers": 1,
        }
        if self.state == "WAITING_FOR_SLOTS":
            out["reason"] = REASON
        return out


class SharedLauncher(FakeLauncher):
    def submit(self, topology):
        super().submit(topology)
        shared = SharedHandle(topology.name, self)
        self.handles[topology.name] = shared
        return shared


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


def test_a_shared_plan_waits_for_slots_with_the_reason_and_names_its_application():
    launcher = SharedLauncher(initial_state="WAITING_FOR_SLOTS")
    tm = TopologyManager(launcher, EndpointTable(), kill_wait_secs=0, resubmit_interval=0.05)
    tm.deploy(1, "A", lambda: tiny("A[1]"), "A[1]")
    status = wait(tm, (1, "A"), "WAITING_FOR_SLOTS")
    assert status["reason"] == REASON
    assert (status["application"], status["packing"], status["applicationId"]) == (
        "cep-pool[1]",
        "shared",
        "app-7",
    )
    launcher.handles["A[1]"].state = "ACTIVE"  # another plan ended: it starts by itself
    assert tm.status(1, "A")["state"] == "ACTIVE"


def test_a_plan_of_its_own_application_names_itself():
    tm = TopologyManager(FakeLauncher(), EndpointTable(), kill_wait_secs=0)
    tm.deploy(1, "B", lambda: tiny("B[1]"), "B[1]")
    status = wait(tm, (1, "B"), "ACTIVE")
    assert (status["application"], status["packing"]) == ("B[1]", "app-per-plan")
