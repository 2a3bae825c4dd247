"""Plans spread over three Spark workers on three "machines" (manager/rig.py): where
each instance runs is shown by the status, `cep topology list` and the console; a machine's
death loses no accepted event and writes none twice."""

import collections
import json
import time
import urllib.error
import urllib.request

import pytest

from tests.auth_helpers import authorize
from tests.machines.rig import Rig, require_rig, wait_for

pytestmark = pytest.mark.slow
T, NAME = -1234, "Spread"
PLAN = """@Plan:name('Spread')
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('Temps:1.0.0')
define stream Temps (room int, temp double);
@Export('Hot:1.0.0') @sink(type='file', path='hot.jsonl')
define stream Hot (room int, temp double);
@info(name='pass') @dist(parallel='3', execGroup='f')
from Temps select room, temp insert into Hot;
"""


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    require_rig()
    rig = Rig(tmp_path_factory.mktemp("machines"))
    try:
        rig.up().start_system()
        rig.manager.plans.add(T, PLAN)
        wait_for(lambda: _active(rig), 240, "Spread ACTIVE with its outflow connected")
        yield rig
    finally:
        rig.down()


def _active(rig):
    st = rig.manager.plans.status(T, NAME)
    return st["state"] == "ACTIVE" and (st.get("outflow") or {}).get("connected") == 1 and st


def _placement(rig):
    """{address: [instance, ...]} once every instance has reported."""
    placement = rig.manager.plans.status(T, NAME).get("placement") or {}
    return placement if sum(len(v) for v in placement.values()) == 5 else None


class Sender:
    """POSTs `rate` events/s (20 requests a second, ids counting up) to the host's CEP
    worker; keeps the ids of every request whose events were all accepted."""

    def __init__(self, url, first=0, rate=200):
        import threading

        self.url, self.first, self.next, self.per = url, first, first, max(1, rate // 20)
        self.accepted, self.refused = [], 0
        self.sent_at = {}  # first id of a request -> time.monotonic() it was sent
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        tick = time.monotonic()
        while not self.stop.is_set():
            ids = list(range(self.next, self.next + self.per))
            self.next += self.per
            self.sent_at[ids[0]] = time.monotonic()
            req = urllib.request.Request(
                self.url,
                json.dumps([[i, 1.0] for i in ids]).encode(),
                {"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    if json.loads(resp.read())["accepted"] == len(ids):
                        self.accepted.extend(ids)
                    else:
                        self.refused += len(ids)
            except (urllib.error.URLError, OSError, ValueError):
                self.refused += len(ids)
            tick += 0.05
            time.sleep(max(0.0, tick - time.monotonic()))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


class SinkWatch:
    """Tails the sink file every 20 ms and notes when each id first appeared there; with the
    Sender's send times that gives each event's latency from its POST to the sink file."""

    def __init__(self, path):
        import threading

        self.path, self.offset, self.seen = path, 0, {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        rest = b""
        while not self.stop.wait(0.02):
            try:
                with open(self.path, "rb") as f:
                    f.seek(self.offset)
                    data = f.read()
            except FileNotFoundError:
                continue
            self.offset += len(data)
            now, lines = time.monotonic(), (rest + data).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line.strip():
                    self.seen.setdefault(json.loads(line)["data"][0], now)

    def latencies(self, sender, first, end):
        """Latencies (ms, sorted) of the requests whose first id is in [first, end)."""
        return sorted(
            (self.seen[i] - t) * 1000
            for i, t in sender.sent_at.items()
            if first <= i < end and i in self.seen
        )

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)


def _pcts(values):
    """'p50 X ms, p99 Y ms (n)' of sorted latencies."""
    if not values:
        return "no events"
    at = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
    return f"p50 {at(0.5):.0f} ms, p99 {at(0.99):.0f} ms ({len(values)} requests)"


def sink_ids(path):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return collections.Counter()
    return collections.Counter(
        json.loads(line)["data"][0] for line in text.split("\n")[:-1] if line.strip()
    )


def test_instances_spread_over_the_three_machines_and_status_names_them(rig, capsys, monkeypatch):
    placement = wait_for(lambda: _placement(rig), 60, "every instance's address reported")
    machines = {m.address for m in rig.machines}
    assert set(placement) <= machines, placement  # every instance runs on a rig machine
    assert len(placement) == 3, placement  # spread: one executor on each machine
    where = {name: host for host, names in placement.items() for name in names}
    group = [n for n in where if n.endswith("[2]")][0][:-3]  # the component of 3 instances
    assert len({where[f"{group}[{i}]"] for i in range(3)}) >= 2, placement
    # cep topology list shows the machines and how many instances each runs
    from cep.cli.main import main

    # as a user points the CLI at a cluster: the environment (restored after the test, so the
    # rig's master does not leak into a later test of this process)
    monkeypatch.setenv("CEP_SPARK_STATE_DIR", str(rig.root / "state"))
    monkeypatch.setenv("CEP_SPARK_MASTER", rig.master_url)
    monkeypatch.setenv("CEP_SPARK_MASTER_UI_URL", rig.ui)
    assert main(["topology", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[7] == "Hosts"
    cell = next(line for line in out if line.startswith(f"{NAME}[")).split()[7]
    assert sorted(cell.split(",")) == sorted(f"{h}*{len(n)}" for h, n in placement.items())
    # the console's plan page lists each machine with its instances
    html = _console_plan(rig)
    for host, names in placement.items():
        assert host in html and ", ".join(names) in html, (host, names)


def _console_plan(rig):
    from manager.web import create_app

    app = create_app({"MANAGER": rig.manager})
    with app.test_client() as client:
        authorize(client, rig.manager)
        resp = client.get(f"/console/tenants/{T}/plans/{NAME}")
        assert resp.status_code == 200, resp.status_code
        return resp.get_data(as_text=True)


def _events_url(rig):
    return f"{rig.worker.http_url}/events/{T}/{NAME}/Temps"


def _deliver(rig, sender, what, started, timeout=300):
    """Waits until the sink holds every id `sender` had accepted; asserts none is there twice
    and none nobody sent; returns the seconds since `started`."""
    path = rig.sink_file("hot.jsonl")
    want = collections.Counter(sender.accepted)
    deadline = time.monotonic() + timeout
    while True:
        got = sink_ids(path)
        missing = want - got
        if not missing:
            break
        if time.monotonic() > deadline:
            pytest.fail(
                f"{what}: {sum(missing.values())} accepted ids never reached the sink "
                f"(first {sorted(missing)[:10]}); plan "
                f"{rig.manager.plans.status(T, NAME)}"
            )
        time.sleep(0.25)
    took = time.monotonic() - started
    time.sleep(1.0)  # a replay's duplicates would arrive with the missing ids
    got = sink_ids(path)
    dups = {i: n for i, n in got.items() if n > 1}
    assert not dups, f"{what}: {len(dups)} ids written twice (first {sorted(dups)[:10]})"
    stray = [i for i in got if sender.next <= i < sender.first + 1_000_000]  # its id block
    assert not stray, f"{what}: ids nobody sent at the sink ({stray[:10]})"
    return took


def _flowing_again(rig, sender, after):
    """The first moment an id accepted after `after` (an id) reaches the sink."""
    path = rig.sink_file("hot.jsonl")
    return any(i >= after for i in sink_ids(path))


def test_a_slow_machine_loses_nothing_and_writes_nothing_twice(rig):
    """The machine that runs the publisher bolt gets 200 ms of delay both ways for 20 s:
    events keep flowing through it, none is lost or written twice, nothing restarts; the
    sink latency before, during and after is printed (measured, not asserted)."""
    wait_for(lambda: _active(rig), 120, "Spread ACTIVE before the episode")
    placement = wait_for(lambda: _placement(rig), 60, "every instance's address reported")
    victim = rig.machine_of(
        next(h for h, names in placement.items() if any("Publisher" in n for n in names))
    )
    restarts = rig.manager.plans.status(T, NAME).get("restarts", 0)
    with (
        SinkWatch(rig.sink_file("hot.jsonl")) as watch,
        Sender(_events_url(rig), first=4_000_000, rate=200) as sender,
    ):
        time.sleep(8)
        slow_from = sender.next
        victim.delay(200)
        try:
            time.sleep(20)
            slow_to = sender.next
            # events sent while it was slow reach the sink while it is still slow
            wait_for(
                lambda: _flowing_again(rig, sender, slow_from),
                60,
                "results of events sent to the slow machine at the sink",
            )
        finally:
            victim.delay(None)
        time.sleep(8)
    _deliver(rig, sender, f"200 ms delay on {victim.address}", time.monotonic())
    st = rig.manager.plans.status(T, NAME)
    assert st["state"] == "ACTIVE" and st.get("restarts", 0) == restarts, st
    before = watch.latencies(sender, sender.first, slow_from)
    slow = watch.latencies(sender, slow_from, slow_to)
    after = watch.latencies(sender, slow_to, sender.next)
    print(
        f"\nmachine {victim.address} (publisher bolt) delayed 200 ms both ways for 20 s at "
        f"200/s, POST to sink file: before {_pcts(before)}; slow {_pcts(slow)}; after "
        f"{_pcts(after)}; {len(sender.accepted)} accepted ids at the sink once, "
        f"{sender.refused} refused"
    )


def test_a_machines_death_loses_nothing_and_results_flow_again(rig):
    placement = wait_for(lambda: _placement(rig), 60, "every instance's address reported")
    victim = rig.machine_of(sorted(placement)[0])
    restarts = rig.manager.plans.status(T, NAME).get("restarts", 0)
    with Sender(_events_url(rig), first=1_000_000, rate=200) as sender:
        time.sleep(3)
        killed, marker = time.monotonic(), sender.next
        n = victim.kill_all()
        wait_for(
            lambda: _flowing_again(rig, sender, marker),
            300,
            "results of events sent after the machine's death at the sink",
        )
        flowing = time.monotonic() - killed
        time.sleep(2)
    assert n >= 2 and sender.accepted, (n, len(sender.accepted))
    took = _deliver(rig, sender, f"death of {victim.address}", killed)
    st = rig.manager.plans.status(T, NAME)
    assert st["state"] == "ACTIVE" and st["restarts"] > restarts, st
    placement = wait_for(lambda: _placement(rig), 60, "every instance reported again")
    assert victim.address not in placement, placement  # now on the two surviving machines
    print(
        f"\nmachine {victim.address} killed ({n} processes) at {sender.per * 20}/s: results "
        f"flowing again after {flowing:.1f} s, all {len(sender.accepted)} accepted ids at "
        f"the sink once {took:.1f} s after the kill; {sender.refused} refused while down"
    )
    rig.start_worker(victim)  # the machine comes back for the next tests
    wait_for(lambda: rig.alive_workers() == 3, 90, "the machine's worker registered again")


def test_a_partitioned_machine_loses_nothing_and_no_instance_runs_twice(rig):
    wait_for(lambda: _active(rig), 120, "Spread ACTIVE before the episode")
    placement = wait_for(lambda: _placement(rig), 60, "every instance's address reported")
    victim = rig.machine_of(sorted(placement)[0])
    with Sender(_events_url(rig), first=3_000_000, rate=200) as sender:
        time.sleep(2)
        cut = time.monotonic()
        victim.partition(cut=True)  # its traffic dropped both ways
        try:
            time.sleep(30)
        finally:
            victim.partition(cut=False)
        healed, marker = time.monotonic(), sender.next
        wait_for(
            lambda: _flowing_again(rig, sender, marker),
            300,
            "results of events sent after the heal at the sink",
        )
        flowing = time.monotonic() - healed
        time.sleep(2)
    took = _deliver(rig, sender, f"partition of {victim.address}", cut)
    wait_for(lambda: _active(rig), 120, "Spread ACTIVE after the heal")
    # no instance runs twice: one report per instance of the current stage attempt, and the
    # sink (checked above) holds no id twice
    placement = wait_for(lambda: _placement(rig), 60, "every instance reported")
    names = [n for names in placement.values() for n in names]
    assert len(names) == len(set(names)) == 5, placement
    st = rig.manager.plans.status(T, NAME)
    print(
        f"\nmachine {victim.address} cut off for 30 s at 200/s: results flowing again "
        f"{flowing:.1f} s after the heal, all {len(sender.accepted)} accepted ids at the sink "
        f"once {took:.1f} s after the cut; stage restarts so far {st.get('restarts')}"
    )


def _waiting(rig):
    st = rig.manager.plans.status(T, NAME)
    return st if st["state"] == "WAITING_FOR_SLOTS" else None


def test_too_few_slots_on_the_survivors_waits_with_the_numbers_and_resumes(rig):
    wait_for(lambda: _active(rig), 120, "Spread ACTIVE before the episode")
    victims = rig.machines[:2]  # the third machine survives
    with Sender(_events_url(rig), first=2_000_000, rate=100) as sender:
        time.sleep(2)
        started = time.monotonic()
        for machine in victims:  # two of three machines die: 4 slots left for 5 tasks
            machine.kill_all()
        st = wait_for(lambda: _waiting(rig), 180, "WAITING_FOR_SLOTS on the last machine")
        assert "needs 5 slots (cores), has 4" in st["reason"], st["reason"]
        assert "the cluster has 4, 0 free" in st["reason"], st["reason"]
        for machine in victims:  # the machines come back: the plan resumes by itself
            rig.start_worker(machine)
        wait_for(
            lambda: rig.manager.plans.status(T, NAME)["state"] == "ACTIVE",
            300,
            "Spread ACTIVE again once the machines returned",
        )
        marker = sender.next
        wait_for(lambda: _flowing_again(rig, sender, marker), 120, "results flowing again")
        time.sleep(1)
    took = _deliver(rig, sender, "two machines lost, then back", started)
    placement = wait_for(lambda: _placement(rig), 60, "every instance reported again")
    assert set(placement) <= {m.address for m in rig.machines}, placement
    outflow = (rig.manager.plans.status(T, NAME).get("outflow") or {}).get("text")
    print(
        f"\nwaited in WAITING_FOR_SLOTS ({st['reason']}); all {len(sender.accepted)} accepted "
        f"ids at the sink once {took:.1f} s after the two machines died; outflow {outflow}"
    )
