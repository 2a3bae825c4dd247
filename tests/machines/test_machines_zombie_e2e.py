"""A partition longer than Spark's worker timeout (manager/rig.py with
spark.worker.timeout 10 s): the master declares the cut-off machine's worker dead, the stage
runs again on the two others, and when the link returns the old attempt's tasks there
(zombies) must not publish: the worker takes output only from the newest attempt
(publishers/fencing.py). Nothing accepted is lost, nothing is written twice, every instance
runs once. The plan has a spare executor (topology.spare_workers 1): a machine's death
re-runs the stage on the surviving executors at once. CEP_RIG_SILENCE_S=4 turns the driver's
silence check on (topology.task_silence_s): it gives a silent machine's tasks up and kills its
executor without waiting for Spark; off by default (see topology/README.md: after a quick heal
the plan may not get its spare executor back, and the death test then waits for it in vain)."""

import os
import time

import pytest

from tests.machines.rig import Rig, require_rig, wait_for
from tests.machines.test_machines_e2e import (
    NAME,
    PLAN,
    T,
    Sender,
    _active,
    _deliver,
    _events_url,
    _flowing_again,
    _placement,
)

pytestmark = pytest.mark.slow
WORKER_TIMEOUT_S = 10
# the driver fails an attempt whose task it has not heard from this long (0: off)
SILENCE_S = float(os.environ.get("CEP_RIG_SILENCE_S", "0"))


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    require_rig()
    rig = Rig(
        tmp_path_factory.mktemp("zombie"), java_opts=(f"-Dspark.worker.timeout={WORKER_TIMEOUT_S}",)
    )
    try:
        rig.up().start_system(
            spark={"topology.spare_workers": 1, "topology.task_silence_s": SILENCE_S}
        )
        rig.manager.plans.add(T, PLAN)
        wait_for(lambda: _active(rig), 240, "Spread ACTIVE with its outflow connected")
        yield rig
    finally:
        rig.down()


def _outflow(rig):
    return rig.worker.plans[(T, NAME)].service.metrics()


def _rerun(rig, restarts, victim):
    """The plan ACTIVE again after a stage restart, with no instance on `victim`."""
    st = rig.manager.plans.status(T, NAME)
    if st["state"] != "ACTIVE" or st.get("restarts", 0) <= restarts:
        return None
    placement = _placement(rig)
    return placement if placement and victim.address not in placement else None


def test_after_a_long_partition_heals_the_old_attempt_publishes_nothing(rig):
    placement = wait_for(lambda: _placement(rig), 60, "every instance's address reported")
    victim = rig.machine_of(
        next(h for h, names in placement.items() if any("Publisher" in n for n in names))
    )
    restarts = rig.manager.plans.status(T, NAME).get("restarts", 0)
    topology = next(iter(_outflow(rig)["fences"]))
    before = _outflow(rig)["fences"][topology]
    with Sender(_events_url(rig), first=5_000_000, rate=200) as sender:
        time.sleep(3)
        cut = time.monotonic()
        victim.partition(cut=True)
        try:
            placement = wait_for(
                lambda: _rerun(rig, restarts, victim),
                300,
                "the stage running again on the two other machines",
            )
            rerun = time.monotonic() - cut
            current = _outflow(rig)["fences"][topology]
        finally:
            victim.partition(cut=False)
        marker = sender.next
        wait_for(lambda: _flowing_again(rig, sender, marker), 120, "results after the heal")
        time.sleep(15)  # the healed machine's old tasks and queued frames get their chance
    took = _deliver(rig, sender, f"partition of {victim.address} past the worker timeout", cut)
    # the worker's fence moved on to the re-run attempt (same driver, a later attempt) and
    # stayed there: nothing of the old attempt was taken after it
    assert current[0] == before[0] and current[1] > before[1], (before, current)
    out = _outflow(rig)
    assert out["fences"][topology] == current, (current, out["fences"])
    # every instance runs once, on the machines that stayed
    placement = wait_for(lambda: _placement(rig), 60, "every instance reported")
    names = [n for names in placement.values() for n in names]
    assert len(names) == len(set(names)) == 5 and victim.address not in placement, placement
    stale_logs = sum(
        p.read_text(errors="replace").count("is not the current attempt")
        for p in (rig.root / f"work-{victim.index}").rglob("stderr")
    )
    print(
        f"\nmachine {victim.address} (publisher bolt) cut off with spark.worker.timeout "
        f"{WORKER_TIMEOUT_S} s at 200/s: stage running again on the others {rerun:.1f} s "
        f"after the cut (fence {before} -> {current}); healed after that; "
        f"{len(sender.accepted)} accepted ids at the sink once {took:.1f} s after the cut; "
        f"stale frames refused at the worker: {out['fenced_frames']} "
        f"({out['fenced_events']} events); stale tasks that stopped on the driver's word: "
        f"{stale_logs}; duplicates counted {out['duplicates']}"
    )


def _three_executors(rig):
    """The application's driver has three executors of 3 cores registered (its UI's REST
    API): the spare is in place again after the previous episode."""
    import json
    import urllib.request

    ui = _status(rig).get("ui")
    try:
        with urllib.request.urlopen(f"{ui}/api/v1/applications", timeout=2) as resp:
            app = json.loads(resp.read())[0]["id"]
        with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/executors", timeout=2) as resp:
            executors = [e for e in json.loads(resp.read()) if e["id"] != "driver"]
    except (OSError, ValueError, IndexError, KeyError):
        return False
    return len(executors) == 3 and all(
        e.get("totalCores") == 3 and e.get("isActive", True) for e in executors
    )


def _status(rig):
    """The topology's own status (the driver's)."""
    from topology.launcher import get_topology, list_topologies

    name = next(s["name"] for s in list_topologies(rig.launcher.settings))
    return get_topology(name, rig.launcher.settings).status()


def _timeline(rig):
    return _status(rig).get("timeline") or {}


@pytest.mark.parametrize("episode", range(int(os.environ.get("CEP_RIG_DEATHS", "1"))))
def test_a_machines_death_with_a_spare_executor_reruns_on_the_survivors(rig, episode):
    """topology.spare_workers 1: three executors of 3 cores for 5 tasks, so the two that
    survive a machine's death hold every task and the stage runs again on them at once,
    without a new executor. Nothing lost, nothing twice; the times of each step are printed
    (CEP_RIG_DEATHS=N repeats the episode for medians)."""
    wait_for(lambda: _active(rig), 120, "Spread ACTIVE before the episode")
    wait_for(lambda: rig.alive_workers() == 3, 90, "three workers")
    wait_for(lambda: _three_executors(rig), 180, "an executor on each machine again")
    placement = wait_for(lambda: _placement(rig), 60, "every instance's address reported")
    victim = rig.machine_of(sorted(placement)[episode % len(placement)])
    restarts = rig.manager.plans.status(T, NAME).get("restarts", 0)
    with Sender(_events_url(rig), first=6_000_000 + episode * 100_000, rate=200) as sender:
        time.sleep(3)
        killed, at, marker = time.monotonic(), time.time(), sender.next
        victim.kill_all()
        wait_for(
            lambda: _flowing_again(rig, sender, marker),
            300,
            "results of events sent after the machine's death at the sink",
        )
        flowing = time.monotonic() - killed
        time.sleep(2)
    took = _deliver(rig, sender, f"death of {victim.address}", killed)
    st = rig.manager.plans.status(T, NAME)
    assert st["state"] == "ACTIVE" and st["restarts"] > restarts, st
    placement = wait_for(lambda: _placement(rig), 60, "every instance reported again")
    assert victim.address not in placement, placement  # on the two surviving executors
    tl = _timeline(rig)
    print(
        f"\nmachine {victim.address} killed at 200/s with a spare executor: new stage "
        f"attempt's first task {tl.get('attempt_started', 0) - at:.1f} s, every task "
        f"restored {tl.get('attempt_ready', 0) - at:.1f} s, results flowing again "
        f"{flowing:.1f} s after the kill; all {len(sender.accepted)} accepted ids at the "
        f"sink once {took:.1f} s after it; {sender.refused} refused; load "
        f"{os.getloadavg()[0]:.1f}"
    )
    rig.start_worker(victim)  # the machine comes back for the next episode
    wait_for(lambda: rig.alive_workers() == 3, 90, "the machine's worker registered again")
