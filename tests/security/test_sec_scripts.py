"""A runaway [JavaScript] function in a real standalone worker: the event whose call loops
forever or allocates without bound fails (counted in the plan's status, logged), the other
events are processed, and the worker stays healthy and keeps serving the plan."""

import json
import time
import urllib.request

from cep.engine import scripts
from cep.worker.config import load_config
from cep.worker.node import Worker

PLAN = """@Plan:name('Js')
define function risky[JavaScript] return int {
    if (data[0] == 2) { while (true) {} }
    if (data[0] == 3) { var a = []; while (true) { a.push(new Array(1000000).fill(1.5)); } }
    return data[0] * 10;
};
define stream S (k string, v int);
define table T (k string, r int);
from S select k, risky(v) as r insert into T;
"""


def _post(worker, rows):
    body = json.dumps([{"data": r} for r in rows]).encode()
    req = urllib.request.Request(f"{worker.http_url}/events/-1234/Js/S", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def _wait(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate():
        time.sleep(0.05)
    return predicate()


def test_runaway_script_fails_its_event_and_the_worker_stays_healthy(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(scripts, "LIMITS", scripts.ScriptLimits())
    plan = tmp_path / "js.siddhiql"
    plan.write_text(PLAN)
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.mode": "standalone",
            "standalone.plans": [str(plan)],
            "managers.poll_interval": 0.2,
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            # the time cap is generous so the allocating call (four 8 MB arrays) reaches the heap
            # cap first even on a loaded machine
            "scripts.call_millis": 2000.0,
            "scripts.heap_mib": 32,
            "worker.state_dir": str(tmp_path / "state"),
        },
    )
    worker = Worker(cfg).start()
    try:
        assert _wait(lambda: "-1234/Js" in worker.status()["plans"], 10)
        assert _post(worker, [["a", 1], ["b", 2], ["c", 3], ["d", 4]])["accepted"] == 4
        table = worker.plans[(-1234, "Js")].runtime.tables["T"]
        assert _wait(lambda: len(table) == 2)
        assert sorted(table.all_rows()) == [("a", 10), ("d", 40)]
        status = worker.status()["plans"]["-1234/Js"]
        assert status["events_failed"] == 2 and status["engine_errors"] == 0
        assert "risky() ran longer than its cap of 2000 ms" in caplog.text
        assert "risky() grew the heap past its cap of 32 MiB" in caplog.text
        assert _post(worker, [["e", 5]])["accepted"] == 1  # the worker still serves the plan
        assert _wait(lambda: len(table) == 3)
        assert ("e", 50) in table.all_rows()
    finally:
        worker.stop()
