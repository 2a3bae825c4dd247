"""Standalone mode with the real compiler and engine: the sample plan from conf/samples runs
in-process; events in over HTTP and ZeroMQ; the file sinks hold exactly what the offline
engine produces for the same plan and events; plan files are re-read when they change."""

import json
import time
import urllib.request


import cep
from cep.engine.runtime import ExecutionPlanRuntime
from cep.worker.config import load_config
from cep.worker.node import Worker
from receivers.zmq_receiver import ZmqEventClient

SAMPLE_PLAN = "conf/samples/StockAnalysis.siddhiql"


def playback_copy(tmp_path):
    """The sample plan in playback mode: the recorded events' own timestamps drive its time
    window, so the worker's output is deterministic and comparable with the offline engine."""
    path = tmp_path / "StockAnalysis.siddhiql"
    path.write_text("@Plan:playback\n" + open(SAMPLE_PLAN).read())
    return str(path)


SAMPLE_EVENTS = "conf/samples/StockStream.jsonl"


def wait_for(cond, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not cond():
        time.sleep(0.02)
    return cond()


def sample_events():
    with open(SAMPLE_EVENTS) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def offline(plan_text, events):
    """The oracle: the engine in-process over the same events, JSON lines per stream."""
    plan = cep.compile(plan_text)
    rt = ExecutionPlanRuntime(plan)
    out = {}
    for s in ("HighPriceStream", "AvgPriceStream"):
        rt.add_callback(
            s,
            lambda evs, s=s: out.setdefault(s, []).extend(
                {"stream": s, "timestamp": ts, "data": list(row)} for ts, row in evs
            ),
        )
    rt.input_handler("StockStream").send_batch([(e["timestamp"], e["data"]) for e in events])
    rt.shutdown()
    return out


def make_worker(tmp_path, plans):
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.id": "s1",
            "worker.mode": "standalone",
            "standalone.plans": plans,
            "managers.poll_interval": 0.2,
            "receivers.http_host": "127.0.0.1",
            "receivers.http_port": 0,
            "receivers.zmq_host": "127.0.0.1",
            "receivers.zmq_port": 0,
            "sinks.default": "file",
            "sinks.dir": str(tmp_path / "out"),
            "files.roots": [str(tmp_path)],
        },
    )
    return Worker(cfg)


def read_lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def test_sample_plan_over_http_and_zmq_equals_offline_engine(tmp_path):
    events = sample_events()
    plan_file = playback_copy(tmp_path)
    expected = offline(open(plan_file).read(), events)
    w = make_worker(tmp_path, [plan_file]).start()
    try:
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
        url = f"{w.http_url}/events/-1234/StockAnalysis/StockStream"
        half = len(events) // 2
        bad = {"timestamp": events[0]["timestamp"], "data": ["BAD", "price?", 1]}
        reply = post(url, events[:half] + [bad])
        assert (reply["accepted"], reply["rejected"]) == (half, 1)
        client = ZmqEventClient(w.zmq_url)
        client.send(
            ("-1234", "StockAnalysis", "StockStream"),
            [[e["timestamp"], e["data"]] for e in events[half:]],
        )
        out = tmp_path / "out" / "-1234" / "StockAnalysis"
        for stream, rows in expected.items():
            assert wait_for(lambda: len(read_lines(out / f"{stream}.jsonl")) >= len(rows))
            assert read_lines(out / f"{stream}.jsonl") == rows
        assert expected["HighPriceStream"] and expected["AvgPriceStream"]
        client.close()
    finally:
        w.stop()


def test_plan_files_are_reread_and_removed_plans_torn_down(tmp_path):
    plan = tmp_path / "p.siddhiql"
    plan.write_text(
        "@Plan:name('P') define stream S (a int); from S[a > 1] select a insert into O;"
    )
    w = make_worker(tmp_path, [str(tmp_path)]).start()
    try:
        assert wait_for(lambda: w.status()["plans"].get("-1234/P"))
        url = f"{w.http_url}/events/-1234/P/S"
        post(url, [[1], [2], [3]])
        out = tmp_path / "out" / "-1234" / "P" / "O.jsonl"
        assert wait_for(lambda: [r["data"] for r in read_lines(out)] == [[2], [3]])
        time.sleep(0.05)  # a new mtime
        plan.write_text(
            "@Plan:name('P') define stream S (a int); "
            "from S[a > 2] select a * 10 as a insert into O;"
        )
        version = w.status()["plans"]["-1234/P"]["version"]
        assert wait_for(lambda: w.status()["plans"].get("-1234/P", {}).get("version") != version)
        post(url, [[2], [3]])
        assert wait_for(lambda: [r["data"] for r in read_lines(out)] == [[2], [3], [30]])
        plan.write_text("@Plan:name('P') define stream S (a int); from S[a >>] select a;")
        assert wait_for(lambda: w.status()["sync"]["plan_errors"])
        assert w.status()["plans"].get("-1234/P")  # the old version keeps running
        plan.unlink()
        assert wait_for(lambda: not w.status()["plans"])
    finally:
        w.stop()


def test_file_source_feeds_the_plan(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"timestamp": i, "data": [i]}) + "\n" for i in range(5)))
    plan = tmp_path / "p.siddhiql"
    plan.write_text(
        f"@Plan:name('F') @source(type='file', path='{src}') "
        "define stream S (a int); from S[a >= 3] select a insert into O;"
    )
    w = make_worker(tmp_path, [str(plan)]).start()
    try:
        out = tmp_path / "out" / "-1234" / "F" / "O.jsonl"
        assert wait_for(lambda: [r["data"] for r in read_lines(out)] == [[3], [4]])
    finally:
        w.stop()
