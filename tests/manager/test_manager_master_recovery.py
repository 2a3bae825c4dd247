"""A topology FAILED because its Spark master was lost comes back by itself: status
WAITING_FOR_MASTER, then a resubmit once the master answers; a topology FAILED for its own
reason stays FAILED. Fake launcher (the Spark end-to-end run is test_manager_master_e2e.py)."""

from manager.topology_manager import TopologyManager
from manager.topology_recovery import MasterRecovery, master_lost
from manager.registry.table import EndpointTable
from tests.manager.manager_fakes import FakeLauncher
from tests.manager.manager_helpers import poll
from tests.manager.test_manager_topology_manager import tiny

LOST = "the Spark master (http://127.0.0.1:1) has not answered for 31 s"


def fail(handle, reason):
    handle.state = "FAILED"
    handle.status = lambda: {"name": handle.name, "status": "FAILED", "reason": reason}


def manager(alive):
    launcher = FakeLauncher()
    tm = TopologyManager(launcher, EndpointTable(), kill_wait_secs=0, resubmit_interval=0.05)
    tm.recovery = MasterRecovery(tm, lambda: alive[0], interval=0.05, backoff=0.1)
    return tm, launcher


def test_a_topology_whose_master_was_lost_is_resubmitted_when_it_answers():
    alive = [False]
    tm, launcher = manager(alive)
    tm.deploy(-1234, "P", lambda: tiny("P[-1234]"), "P[-1234]", plan_hash="h")
    try:
        poll(lambda: tm.status(-1234, "P")["state"] == "ACTIVE", timeout=5)
        fail(launcher.handles["P[-1234]"], LOST)
        st = tm.status(-1234, "P")
        assert st["state"] == "WAITING_FOR_MASTER" and st["reason"].startswith(LOST)
        poll(
            lambda: tm.recovery.recovered == 0 and tm.deployments[(-1234, "P")].retry_at, timeout=5
        )
        assert len(launcher.submitted) == 1  # the master does not answer yet: no resubmit
        alive[0] = True
        poll(lambda: len(launcher.submitted) == 2, timeout=5)
        poll(lambda: tm.status(-1234, "P")["state"] == "ACTIVE", timeout=5)
        assert tm.recovery.recovered == 1 and tm.deployments[(-1234, "P")].master_retries == 1
    finally:
        tm.shutdown()


def test_a_topology_failed_for_its_own_reason_stays_failed():
    tm, launcher = manager([True])
    tm.deploy(-1234, "P", lambda: tiny("P[-1234]"), "P[-1234]")
    try:
        poll(lambda: tm.status(-1234, "P")["state"] == "ACTIVE", timeout=5)
        fail(launcher.handles["P[-1234]"], "RuntimeError: cannot reach the source")
        tm.recovery.check_once()
        tm.recovery.check_once()
        assert tm.status(-1234, "P")["state"] == "FAILED" and len(launcher.submitted) == 1
    finally:
        tm.shutdown()


def test_master_lost_reasons():
    assert master_lost({"status": "FAILED", "reason": LOST})
    assert master_lost(
        {
            "status": "FAILED",
            "reason": "the Spark master (http://127.0.0.1:1) is "
            "gone: the embedded cluster's worker process (pid 7) ended",
        }
    )
    assert master_lost({"status": "FAILED", "reason": "the Spark application was stopped"})
    assert not master_lost({"status": "ACTIVE", "reason": LOST})
    assert not master_lost({"status": "FAILED", "reason": "ValueError: x"})


def test_the_first_resubmit_after_a_master_loss_is_at_once():
    """No backoff before the first try: the embedded cluster is restarted by that submit."""
    tm, launcher = manager([True])
    tm.recovery.backoff = 3600.0  # a later try would wait an hour; the first must not
    tm.deploy(-1234, "P", lambda: tiny("P[-1234]"), "P[-1234]", plan_hash="h")
    try:
        poll(lambda: tm.status(-1234, "P")["state"] == "ACTIVE", timeout=5)
        fail(launcher.handles["P[-1234]"], LOST)
        poll(lambda: len(launcher.submitted) == 2, timeout=5)
    finally:
        tm.shutdown()
