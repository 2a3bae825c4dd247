"""On real Spark (issue 11, output side): a counted stream through a Siddhi bolt (time window
and partitioned pattern) and real publisher bolts to a real worker publisher service; the
Siddhi bolt's Python worker is killed with SIGKILL mid-stream. Afterwards:
- the exactly-once file and Redis sinks hold every expected result exactly once;
- the at-least-once sink with dedup on holds every result exactly once too;
- the at-least-once sink with `dedup: false` holds every result, and its extras are exactly
  the duplicates the worker counted.
One topology for the module; each test asserts on its outcome."""

import collections
import json
import os
import signal
import time

import pytest
import redis

from manager.registry.client import RegistryClient
from manager.registry.service import RegistryService
from publishers.service import PublisherService
from publishers.sink_set import SinkSet
from tests.topology.checkpoint.test_ckpt_spark_e2e import ROWS, plan_topology, poll
from topology import run_local
from topology.launcher import submit
from topology.testing import CollectBolt

pytestmark = pytest.mark.slow
T, P = -1, "EoPlan"
STREAMS = {"W": ["k", "total", "n"], "P": ["k", "first", "second"]}
SINKS = {  # name -> @sink options (besides the destination)
    "eo_file": {"type": "file", "delivery": "exactly-once"},
    "eo_redis": {"type": "redis", "delivery": "exactly-once"},
    "alo_dedup": {"type": "file"},
    "alo_all": {"type": "file", "dedup": "false"},
}


def sink_specs(out, redis_url):
    specs = {}
    for stream in STREAMS:
        specs[stream] = []
        for name, opts in SINKS.items():
            opts = {k: v for k, v in opts.items() if k != "type"}
            if SINKS[name]["type"] == "file":
                opts["path"] = str(out / f"{name}_{stream}.jsonl")
            else:
                opts.update(url=redis_url, key=f"{name}_{stream}")
            specs[stream].append({"type": SINKS[name]["type"], "options": opts})
    return specs


def seen(outcome, name, stream):
    """The rows (ts, *values) sink `name` holds for `stream`, as a reader sees them."""
    if SINKS[name]["type"] == "redis":
        client = redis.Redis.from_url(outcome["redis"], decode_responses=True)
        items = [
            (int(f["timestamp"]), *json.loads(f["data"]))
            for _, f in client.xrange(f"{name}_{stream}")
        ]
        client.close()
        return collections.Counter(items)
    path = outcome["out"] / f"{name}_{stream}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return collections.Counter((o["timestamp"], *o["data"]) for o in map(json.loads, lines))


def diagnose(result):
    """Per sink and stream: (held, missing, extra) counts, and the service's metrics."""
    counts = {}
    for stream, want in result["expected"].items():
        for name in SINKS:
            got = seen(result, name, stream)
            counts[f"{name}/{stream}"] = (
                sum(got.values()),
                sum((want - got).values()),
                sum((got - want).values()),
            )
    topo = {}
    try:
        for comp, info in result["handle"].metrics()["components"].items():
            topo[comp] = [
                {k: i.get(k) for k in ("received", "emitted", "custom", "errors")}
                for i in info["instances"]
            ]
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        topo = repr(exc)
    return f"{counts}; metrics {result['svc'].metrics()}; topology {topo}"


def publisher_topology(name, registry):
    cfg = {
        "registry": registry,
        "tenant": T,
        "plan": P,
        "host": "127.0.0.1",
        "retry_interval": 0.2,
        "connect_timeout": 2.0,
    }
    t = plan_topology(name, "publishers.bolt:PublisherBolt", cfg, 1000)
    for comp, stream in (("outW", "W"), ("outP", "P")):
        t.components[comp].config["streams"] = {stream: STREAMS[stream]}
    return t


@pytest.fixture(scope="module")
def outcome(spark_settings, redis_url, tmp_path_factory):
    out = tmp_path_factory.mktemp("eo-out")
    local = run_local(plan_topology("EoExpected[-1]", CollectBolt, {}, 0))
    expected = {
        "W": collections.Counter(tuple(r) for r in local.components["outW"][0].rows),
        "P": collections.Counter(tuple(r) for r in local.components["outP"][0].rows),
    }
    # registered once, never heartbeating: a liveness longer than the test
    reg = RegistryService(port=0, bind_host="127.0.0.1", liveness=3600, heartbeat_interval=0.5)
    reg.start()
    sset = SinkSet.from_specs(sink_specs(out, redis_url), f"{T}/{P}")
    svc = PublisherService(sset, "127.0.0.1").start()
    client = RegistryClient(f"tcp://127.0.0.1:{reg.port}")
    client.register("publisher", T, P, "127.0.0.1", svc.port, worker="w1")
    handle = submit(
        publisher_topology(f"{P}[{T}]", f"tcp://127.0.0.1:{reg.port}"),
        spark_settings,
        overrides={"checkpoint.interval": 1.0},
    )
    result = {"out": out, "redis": redis_url, "expected": expected, "svc": svc, "handle": handle}
    try:
        handle.wait_for("ACTIVE", timeout=240)
        poll(
            lambda: (handle.status()["checkpoints"].get("last") or {}).get("id", 0) >= 2,
            60,
            "two complete checkpoints",
        )
        result["before"] = sum(seen(result, "alo_all", "W").values())
        victim = handle.metrics()["components"]["cep"]["instances"][0]
        killed_at = time.monotonic()
        os.kill(victim["pid"], signal.SIGKILL)
        result["status"] = poll(
            lambda: (lambda s: s if s["status"] == "ACTIVE" and s["restarts"] >= 1 else None)(
                handle.status()
            ),
            180,
            "ACTIVE after the restart",
        )
        result["recovered_s"] = time.monotonic() - killed_at
        deadline = time.monotonic() + 90  # exactly-once output comes a checkpoint later
        while not all(
            seen(result, n, s) == expected[s] for n in ("eo_file", "eo_redis") for s in STREAMS
        ):
            if time.monotonic() > deadline:
                pytest.fail(f"exactly-once results not complete within 90 s: {diagnose(result)}")
            time.sleep(0.2)
        poll(
            lambda: not any(expected[s] - seen(result, "alo_all", s) for s in STREAMS),
            30,
            "every result at the at-least-once sinks",
        )
        time.sleep(2.5)  # two more checkpoints: nothing more may arrive
        result["metrics"] = svc.metrics()
        yield result
    finally:
        handle.kill(wait_secs=1)
        svc.stop()
        client.close()
        reg.stop()


def test_the_kill_came_mid_stream_and_the_topology_restored(outcome):
    assert 0 < outcome["before"] < len(ROWS) * 3 // 4
    assert outcome["status"]["checkpoints"]["restored_from"] >= 2
    print(
        f"kill -> ACTIVE {outcome['recovered_s']:.1f} s; metrics "
        f"{ {k: outcome['metrics'][k] for k in ('duplicates', 'controls', 'committed')} }"
    )


@pytest.mark.parametrize("name", ["eo_file", "eo_redis", "alo_dedup"])
def test_every_result_exactly_once(outcome, name):
    for stream in STREAMS:
        got, want = seen(outcome, name, stream), outcome["expected"][stream]
        assert not want - got, f"{name} {stream}: results missing"
        assert not got - want, f"{name} {stream}: duplicates or invented results"


def test_at_least_once_extras_are_the_counted_duplicates(outcome):
    counted = outcome["metrics"]["streams"]
    for stream in STREAMS:
        got, want = seen(outcome, "alo_all", stream), outcome["expected"][stream]
        assert not want - got
        extra = got - want
        assert set(extra) <= set(want)  # extras are repeats, never invented results
        assert sum(extra.values()) == counted[stream]["duplicates"]
    assert outcome["metrics"]["duplicates"] == sum(s["duplicates"] for s in counted.values())
    eo = [k for k in counted["W"]["sinks"] if k["delivery"] == "exactly-once"]
    assert all(k["pending"] == 0 and k["committed"] >= 2 for k in eo)
