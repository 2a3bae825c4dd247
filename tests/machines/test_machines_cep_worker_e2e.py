"""A CEP worker's machine lost while a second CEP worker serves the same plan.

Two Spark machines run the plan; CEP worker "cw1" runs as a process on a machine of its own
(a network namespace on the rig's bridge), CEP worker "host" in the test process on the host.
Both serve the plan: each connects to the receiver spout and registers a publisher for the
plan's two publisher bolts. A client (receivers/failover_sender.py) sends counted events at a
steady rate to cw1, then cw1's machine dies (every process in its namespace killed at once).
The client sends what cw1 had not acknowledged (no checkpoint had committed it) to "host"
and goes on there; the publisher bolt that sent to cw1 is matched to "host" by the registry.
Every accepted event's result reaches a sink (cw1's file up to its death, then host's),
the only duplicates are events the client counted as resent, and results flow again: the
time from the kill to the first result of an event sent after it is printed, not asserted.

Also where each instance runs, as the registry has it: every receiver spout is registered
with the address of the machine its executor runs on (not the driver's, not loopback), and
each worker's publisher with its own machine's address."""

import collections
import json
import threading
import time

import pytest

from receivers.failover_sender import FailoverSender
from tests.machines.rig import Rig, require_rig, wait_for

pytestmark = pytest.mark.slow
T, NAME = -1234, "Pair"
PLAN = """@Plan:name('Pair')
@Plan:dist(receiverParallelism='1', publisherParallelism='2')
@Import('Temps:1.0.0')
define stream Temps (room int, temp double);
@Export('Hot:1.0.0') @sink(type='file', path='hot.jsonl')
define stream Hot (room int, temp double);
@info(name='pass') @dist(parallel='2', execGroup='f')
from Temps select room, temp insert into Hot;
"""


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    require_rig()
    rig = Rig(tmp_path_factory.mktemp("cepworkers"), machines=2)
    try:
        rig.up().start_system()
        rig.cw = rig.add_cep_machine()
        rig.cw_url = rig.start_cep_worker(rig.cw, "cw1")
        rig.manager.plans.add(T, PLAN)
        wait_for(lambda: _ready(rig), 240, "Pair ACTIVE, both workers connected, 2/2 outflow")
        yield rig
    finally:
        rig.down()


def _ready(rig):
    st = rig.manager.plans.status(T, NAME)
    inflow = st.get("inflow") or {}
    return (
        st["state"] == "ACTIVE"
        and st["outflow"]["connected"] == 2
        and all(inflow.get(w, {}).get("connected") == 1 for w in ("cw1", "host"))
    )


def _registry(rig):
    return rig.manager.registry.table.status(T, NAME)


def _bolts_at(rig, worker):
    """The publisher bolts with a live connection to `worker`'s publisher."""
    reg = _registry(rig)
    endpoint = {p["endpoint"]: p["worker"] for p in reg["publishers"]}
    return sorted(
        c["client"]
        for c in reg["connections"]
        if c["kind"] == "publisher" and c["live"] and endpoint.get(c["endpoint"]) == worker
    )


def _placement(rig):
    placement = rig.manager.plans.status(T, NAME).get("placement") or {}
    return placement if sum(len(v) for v in placement.values()) == 5 else None


def test_every_instance_is_registered_with_its_own_machine(rig):
    placement = wait_for(lambda: _placement(rig), 60, "every instance's address reported")
    spark = {m.address for m in rig.machines}
    assert set(placement) <= spark, placement
    where = {name: host for host, names in placement.items() for name in names}
    # the endpoints as GET /api/v1/status lists them
    from manager.deployment_view import endpoints

    listed = [e for e in endpoints(rig.manager.registry.table) if e["plan"] == NAME]
    spouts = [e for e in listed if e["kind"] == "receiver"]
    assert spouts, f"no receiver spout registered: {listed}"
    machines = {ep["endpoint"]: ep["machine"] for ep in _registry(rig)["receivers"]}
    for ep in spouts:  # "Pair[-1234]:EventReceiverSpout:0" -> "EventReceiverSpout[0]"
        _, component, index = ep["component"].rsplit(":", 2)
        assert ep["host"] == where[f"{component}[{index}]"], (ep, placement)
        # its identity for the locality rule: its namespace's address (and that veth's IPv6
        # link-local one), nothing of the host's or another machine's
        assert [a for a in machines[ep["endpoint"]] if ":" not in a] == [ep["host"]], ep
    publishers = {p["worker"]: p for p in _registry(rig)["publishers"]}
    assert {e["worker"]: e["host"] for e in listed if e["kind"] == "publisher"} == {
        "cw1": rig.cw.address,
        "host": rig.host,
    }, listed
    assert publishers["cw1"]["host"] == rig.cw.address, publishers
    assert rig.cw.address in publishers["cw1"]["machine"], publishers
    assert publishers["host"]["host"] == rig.host, publishers
    assert rig.cw.address not in publishers["host"]["machine"], publishers


def _sink_ids(path):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return collections.Counter()
    return collections.Counter(
        json.loads(line)["data"][0] for line in text.split("\n")[:-1] if line.strip()
    )


class Client(threading.Thread):
    """A FailoverSender at `rate` events/s (10 per request), ids counting up from `first`."""

    def __init__(self, urls, first, rate=200):
        super().__init__(daemon=True)
        self.sender = FailoverSender(urls, T, NAME, "Temps", timeout=3.0)
        self.next, self.per, self.first = first, max(1, rate // 20), first
        self.accepted, self.error = [], None
        self.sent_at = {}
        self.halt = threading.Event()

    def run(self):
        tick = time.monotonic()
        try:
            while not self.halt.is_set():
                ids = list(range(self.next, self.next + self.per))
                self.next += self.per
                self.sent_at[ids[0]] = time.monotonic()
                if self.sender.send([[i, 1.0] for i in ids]) == len(ids):
                    self.accepted.extend(ids)
                tick += 0.05
                time.sleep(max(0.0, tick - time.monotonic()))
        except Exception as exc:  # noqa: BLE001 - the test reports it
            self.error = exc

    def stop(self):
        self.halt.set()
        self.join(60)
        assert self.error is None, f"the client failed: {self.error!r}"


def test_a_cep_workers_machine_lost_while_another_serves_the_plan(rig):
    wait_for(lambda: _ready(rig), 120, "Pair ready before the episode")
    # the registry matched one publisher bolt to each worker (fewest connections)
    wait_for(
        lambda: len(_bolts_at(rig, "cw1")) == 1 and len(_bolts_at(rig, "host")) == 1,
        60,
        "one publisher bolt at each CEP worker",
    )
    moved = _bolts_at(rig, "cw1")
    sinks = (rig.sink_file("hot.jsonl", "cw1"), rig.sink_file("hot.jsonl"))
    client = Client([rig.cw_url, rig.worker.http_url], first=10_000_000)
    client.start()
    try:
        wait_for(lambda: len(client.accepted) >= 1000, 60, "1,000 events accepted by cw1")
        assert client.sender.current == 0 and client.sender.stats.failovers == 0
        killed, marker = time.monotonic(), client.next
        n = rig.cw.kill_all()  # cw1's machine dies: every process in its namespace
        first_after = wait_for(
            lambda: min((i for i in _sink_ids(sinks[1]) if i >= marker), default=None),
            120,
            "a result of an event sent after the kill at the other worker's sink",
        )
        flowing = time.monotonic() - killed
        wait_for(
            lambda: len(_bolts_at(rig, "host")) == 2,
            120,
            "both publisher bolts matched to the surviving worker",
            every=0.05,
        )
        rematched = time.monotonic() - killed
        time.sleep(5)  # steady flow through the survivor
    finally:
        client.stop()
    stats = client.sender.stats
    assert n >= 1 and stats.failovers == 1 and client.sender.current == 1, (n, stats)
    # every accepted event acknowledged: a checkpoint committed it in host's log
    assert client.sender.flush(timeout=120), f"{client.sender.pending_events} never committed"
    want = set(client.accepted)
    deadline = time.monotonic() + 120
    while True:
        got = _sink_ids(sinks[0]) + _sink_ids(sinks[1])
        missing = want - set(got)
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not missing, (
        f"{len(missing)} accepted events never reached a sink (first "
        f"{sorted(missing)[:10]}); client {stats}"
    )
    resent = {e[0] for e in stats.resent_ids}
    dups = {i: c for i, c in got.items() if c > 1}
    assert set(dups) <= resent, f"duplicates not resent: {sorted(set(dups) - resent)[:10]}"
    assert sum(c - 1 for c in dups.values()) <= stats.resent, (dups, stats.resent)
    stray = [i for i in got if not client.first <= i < client.next]
    assert not stray, f"ids nobody sent at the sinks: {stray[:10]}"
    # the bolt that sent to cw1 now sends to host; the plan stayed up, nothing restarted
    assert set(moved) <= set(_bolts_at(rig, "host")), (moved, _bolts_at(rig, "host"))
    st = rig.manager.plans.status(T, NAME)
    assert st["state"] == "ACTIVE", st
    print(
        f"\nCEP worker cw1's machine killed ({n} processes) at 200/s with "
        f"{len(client.accepted)} events accepted in all: first result of an event sent after "
        f"the kill (id {first_after}) at host's sink {flowing:.2f} s after the kill; "
        f"{stats.resent} unacknowledged events resent to host, {len(dups)} of them written "
        f"twice; {stats.unanswered} in requests that got no answer; the publisher bolt "
        f"{moved} connected to host {rematched:.2f} s after the kill; restarts "
        f"{st.get('restarts', 0)}"
    )
