"""Plans spread over three Spark workers on three "machines" (tests/machines/rig.py): where
each instance runs is shown by the status, `cep topology list` and the console; a machine's
death loses no accepted event and writes none twice."""
import collections
import json
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import IN_CI
from tests.machines.rig import Rig, wait_for, why_not_possible

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
    reason = why_not_possible()
    if reason:
        if IN_CI:
            pytest.fail(f"the multi-machine rig needs namespaces: {reason} (CI=true)")
        pytest.skip(f"cannot build the multi-machine rig here: {reason}")
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
        self.url, self.next, self.per = url, first, max(1, rate // 20)
        self.accepted, self.refused = [], 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        tick = time.monotonic()
        while not self.stop.is_set():
            ids = list(range(self.next, self.next + self.per))
            self.next += self.per
            req = urllib.request.Request(self.url, json.dumps([[i, 1.0] for i in ids]).encode(),
                                         {"Content-Type": "application/json"})
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


def sink_ids(path):
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return collections.Counter()
    return collections.Counter(json.loads(line)["data"][0]
                               for line in text.split("\n")[:-1] if line.strip())


def test_instances_spread_over_the_three_machines_and_status_names_them(rig, capsys):
    placement = wait_for(lambda: _placement(rig), 60, "every instance's address reported")
    machines = {m.address for m in rig.machines}
    assert set(placement) <= machines, placement  # every instance runs on a rig machine
    assert len(placement) == 3, placement  # spread: one executor on each machine
    where = {name: host for host, names in placement.items() for name in names}
    group = [n for n in where if n.endswith("[2]")][0][:-3]  # the component of 3 instances
    assert len({where[f"{group}[{i}]"] for i in range(3)}) >= 2, placement
    # cep topology list shows the machines and how many instances each runs
    from cep.cli.main import main
    from topology.spark_settings import load_spark_settings
    import cep.cli.topology as cli
    cli._settings = lambda: load_spark_settings().with_overrides(
        {"spark.state_dir": str(rig.root / "state"), "spark.master": rig.master_url,
         "spark.master_ui_url": rig.ui})
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
        resp = client.get(f"/console/tenants/{T}/plans/{NAME}")
        assert resp.status_code == 200, resp.status_code
        return resp.get_data(as_text=True)
