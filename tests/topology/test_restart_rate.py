"""Issue 11: the restart limit is a rate, not a lifetime total. Unit tests of RestartRate, and
on the real embedded Spark cluster: killing a task's Python worker (kill -9) more times than
Spark's per-job attempt limit, spread over longer than the window, leaves the topology ACTIVE
(the job is submitted again); killing it faster than the rate allows makes it FAILED with a
reason naming the rate."""

import os
import signal

import pytest

from topology.launcher import get_topology, submit
from topology.restart_rate import RestartRate
from tests.topology.test_spark_e2e import counter_topology, executed, poll


def test_the_rate_counts_only_the_window():
    now = [0.0]
    rate = RestartRate(max_restarts=2, window_s=10, clock=lambda: now[0])
    assert rate.record() and rate.record()
    now[0] = 5.0
    assert not rate.record() and rate.count() == 3
    assert "topology.max_restarts=2 per topology.restart_window_s=10" in rate.reason()
    now[0] = 10.5  # the first two left the window
    assert rate.count() == 1 and rate.record()


def _kill_one(handle):
    """kill -9 the Python worker of one instance; returns the attempt it belonged to."""
    victim = handle.metrics()["components"]["pass"]["instances"][0]
    os.kill(victim["pid"], signal.SIGKILL)
    return victim["attempt"]


def _active_after(handle, attempt, timeout=120):
    return poll(
        lambda: (lambda s: s if s["status"] == "ACTIVE" and s["attempt"] > attempt else None)(
            handle.status()
        ),
        timeout=timeout,
    )


@pytest.mark.slow
def test_kills_spread_over_the_window_keep_it_active_fast_ones_fail_it(spark_settings, cluster):
    """Two topologies side by side (4 slots each): `Rate` with a 5 s window is killed each
    time its last restart has left the window, `RateFast` with a 600 s window, that no restart
    on any machine outlasts, is killed again as soon as it is back. One topology with one
    window had to wait out a window long enough for a loaded machine's restart four times."""
    window = 5.0
    limits = {
        "topology.max_stage_attempts": 2,  # Spark gives up on a job after 2 failed attempts
        "topology.max_restarts": 1,
    }
    handle = submit(
        counter_topology("Rate[-1234]", bolts=2),
        spark_settings,
        overrides={**limits, "topology.restart_window_s": window},
    )
    fast = submit(
        counter_topology("RateFast[-1234]", bolts=2),
        spark_settings,
        overrides={**limits, "topology.restart_window_s": 600.0},
    )
    try:
        handle.wait_for("ACTIVE", timeout=150)
        fast.wait_for("ACTIVE", timeout=150)
        poll(lambda: executed(fast) > 0)
        _active_after(fast, _kill_one(fast))  # 1 restart in the window: allowed
        _kill_one(fast)  # a second within the window: more than the rate allows
        status = fast.wait_for("FAILED", timeout=120)
        assert "topology.max_restarts=1 per topology.restart_window_s=600" in status["reason"]
        for _ in range(3):  # 3 kills > the 2 attempts Spark allows one job
            poll(lambda: handle.status()["restarts_in_window"] == 0, timeout=window + 10)
            poll(lambda: executed(handle) > 0)
            status = _active_after(handle, _kill_one(handle))
        assert status["restarts"] >= 3 and status["resubmits"] >= 1
        poll(lambda: executed(handle) > 0)  # events flow in the resubmitted job
        assert handle.status()["status"] == "ACTIVE"
    finally:
        for name, each in (("Rate[-1234]", handle), ("RateFast[-1234]", fast)):
            if each.status()["status"] not in ("FAILED", "KILLED"):
                get_topology(name, spark_settings).kill(wait_secs=1)
