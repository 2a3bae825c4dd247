"""End-to-end on the real embedded Spark standalone cluster (slow)."""

import collections
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import zmq

from cep.protocol.frames import pack_message, unpack_message
from topology.cluster import master_state, stop_cluster
from topology.control import run_dir_alive
from topology.exceptions import TopologyExistsError, WaitTimeoutError
from topology.launcher import get_topology, list_topologies, submit
from topology.model import Grouping, Topology

pytestmark = pytest.mark.slow
SENTENCES = [["the quick brown fox"], ["jumps over the lazy dog"], ["the dog sleeps"]] * 200


@pytest.fixture(autouse=True)
def kill_leftovers(spark_settings):
    """A failed test must not leave its topology holding slots for the next ones."""
    yield
    for status in list_topologies(spark_settings):
        get_topology(status["name"], spark_settings).kill(wait_secs=0, timeout=20)


def poll(fn, timeout=120.0, interval=0.25):
    """Call fn until it returns a truthy value; fail with the last value otherwise."""
    deadline, value = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"condition not met within {timeout} s (last value {value!r})")


def counter_topology(name, bolts=1, rate=20000):
    t = Topology(name)
    t.add_spout(
        "nums",
        "topology.testing:CounterSpout",
        outputs=["n"],
        config={"batch_size": 500, "rate": rate},
    )
    t.add_bolt(
        "pass",
        "topology.testing:CollectBolt",
        inputs={"nums": "shuffle"},
        parallelism=bolts,
        outputs=["n"],
    )
    t.add_bolt("count", "topology.testing:CountBolt", inputs={"pass": ["n"]})
    return t


def raw_request(handle, data):
    """Send raw bytes to the driver's control socket and decode the reply."""
    info = json.loads((handle.run_dir / "driver.json").read_text())
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(info["control"])
        sock.send(data)
        assert sock.poll(5000), "the driver did not answer"
        return unpack_message(sock.recv())
    finally:
        sock.close()


def executed(handle, component="count"):
    return handle.metrics()["components"].get(component, {}).get("executed", 0)


def cmdline(pid):
    return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")


def jvm_of(pid):
    """The command line of the nearest JVM among `pid`'s ancestors (an executor, for a Python
    worker of a task)."""
    while pid > 1:
        args = cmdline(pid)
        if os.path.basename(args[0]) == b"java":
            return args
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    pytest.fail("no JVM among the ancestors")


def active_app_names(cluster):
    return [a["name"] for a in master_state(cluster.ui_url)["activeapps"]]


def test_word_count_fields_grouping_exact(spark_settings, cluster, tmp_path):
    t = Topology("WordCount[-1234]")
    t.add_spout(
        "sentences",
        "topology.testing:ListSpout",
        outputs=["sentence"],
        config={"rows": SENTENCES, "batch_size": 50},
    )
    t.add_bolt(
        "split",
        "topology.testing:SplitBolt",
        inputs={"sentences": "shuffle"},
        parallelism=2,
        outputs=["word"],
    )
    t.add_bolt(
        "count",
        "topology.testing:CountBolt",
        inputs={"split": Grouping.by_fields("word")},
        parallelism=2,
        config={"out_dir": str(tmp_path)},
    )
    expected = collections.Counter(w for (s,) in SENTENCES for w in s.split())
    started = time.monotonic()
    handle = submit(t, spark_settings)
    status = handle.wait_for("ACTIVE", timeout=150)
    submit_to_active = time.monotonic() - started
    assert status["tasks"] == 5 and status["ready"] == 5
    assert "WordCount[-1234]" in active_app_names(cluster)
    assert [s["name"] for s in list_topologies(spark_settings)] == ["WordCount[-1234]"]
    total = sum(expected.values())

    def all_counted():  # metrics are periodic snapshots: wait until every report is current
        m = handle.metrics()["components"]
        return (
            m
            if (m["sentences"]["emitted"], m["split"]["transferred"], m["count"]["executed"])
            == (len(SENTENCES), total, total)
            else None
        )

    metrics = poll(all_counted)
    assert len(metrics["count"]["instances"]) == 2 and metrics["count"]["failed"] == 0
    final = handle.kill(wait_secs=5)
    assert final["status"] == "KILLED"
    parts = [json.loads(p.read_text())["counts"] for p in sorted(tmp_path.glob("count-*.json"))]
    assert len(parts) == 2 and not set(parts[0]) & set(parts[1]), "a word reached two instances"
    assert collections.Counter(parts[0]) + collections.Counter(parts[1]) == expected
    # speed is a benchmark's business (benchmarks/topology_bench.py), not a test's: a loaded
    # machine must not fail the suite
    print(f"submit to ACTIVE took {submit_to_active:.1f} s")


def test_waiting_for_slots_kill_frees_slots_side_by_side(spark_settings, cluster):
    huge = submit(counter_topology("Huge[-1234]", bolts=7), spark_settings)  # 9 > 8 slots
    big = submit(counter_topology("Big[-1234]", bolts=4), spark_settings)  # 6 of 8 slots
    big.wait_for("ACTIVE", timeout=150)
    assert huge.wait_for("WAITING_FOR_SLOTS", timeout=30)["reason"] == (
        "needs 9 free slots (cores); the cluster has 8, 2 free: more than the whole cluster, so "
        "it waits until workers with 1 more cores join (spark.slots) or its @dist parallel is "
        "lowered"
    )
    assert huge.kill(wait_secs=1)["status"] == "KILLED"  # a waiting topology can be killed
    assert "Huge[-1234]" not in active_app_names(cluster)
    small = submit(counter_topology("Small[-1234]", bolts=1), spark_settings)  # 3 slots
    third = submit(counter_topology("Third[-1234]", bolts=1), spark_settings)  # 3 slots
    for handle in (small, third):
        assert handle.wait_for("WAITING_FOR_SLOTS", timeout=60)["reason"].startswith(
            "needs 3 free slots (cores); the cluster has 8, "
        )
    assert master_state(cluster.ui_url)["coresused"] == 6
    poll(lambda: executed(big) > 0)
    assert big.kill(wait_secs=2)["status"] == "KILLED"
    assert "Big[-1234]" not in active_app_names(cluster)
    for handle in (small, third):  # both start once the slots are freed: 3 + 3 side by side
        handle.wait_for("ACTIVE", timeout=150)
    first_counts = executed(small), executed(third)
    poll(lambda: executed(small) > first_counts[0] and executed(third) > first_counts[1])
    assert master_state(cluster.ui_url)["coresused"] == 6
    assert {"Small[-1234]", "Third[-1234]"} <= set(active_app_names(cluster))
    assert {s["name"] for s in list_topologies(spark_settings)} == {"Small[-1234]", "Third[-1234]"}
    for handle in (small, third):
        assert handle.kill(wait_secs=1)["status"] == "KILLED"
    poll(lambda: master_state(cluster.ui_url)["coresused"] == 0, timeout=30)
    assert list_topologies(spark_settings) == []


def test_killed_python_worker_restarts_the_stage(spark_settings):
    handle = submit(counter_topology("Restart[-1234]", bolts=2), spark_settings)
    handle.wait_for("ACTIVE", timeout=150)
    poll(lambda: executed(handle) > 0)
    victim = handle.metrics()["components"]["pass"]["instances"][0]
    # the executor and the driver run with the start-up options of spark.jvm_options
    assert b"-XX:TieredStopAtLevel=1" in jvm_of(victim["pid"])
    driver = json.loads((handle.run_dir / "driver.json").read_text())["pid"]
    assert b"-XX:TieredStopAtLevel=1" in jvm_of(driver)
    os.kill(victim["pid"], signal.SIGKILL)  # the Python worker running one instance
    status = poll(
        lambda: (lambda s: s if s["status"] == "ACTIVE" and s["restarts"] >= 1 else None)(
            handle.status()
        ),
        timeout=90,
    )
    assert status["attempt"] > victim["attempt"]
    poll(lambda: executed(handle) > 0)  # counters restart with the new attempt
    pids = {i["pid"] for i in handle.metrics()["components"]["pass"]["instances"]}
    assert victim["pid"] not in pids
    with pytest.raises(TopologyExistsError, match="already running"):
        submit(counter_topology("Restart[-1234]"), spark_settings)
    assert get_topology("Restart[-1234]", spark_settings).kill(wait_secs=2)["status"] == "KILLED"


def test_backpressure_and_cli_verbs(spark_settings, monkeypatch, capsys):
    from cep.cli.main import main

    monkeypatch.setenv("CEP_SPARK_STATE_DIR", spark_settings["spark.state_dir"])
    t = Topology("Slow[-1234]")
    t.add_spout("nums", "topology.testing:CounterSpout", outputs=["n"], config={"batch_size": 500})
    t.add_bolt(
        "slow", "topology.testing:SlowBolt", inputs={"nums": "shuffle"}, config={"sleep_ms": 20}
    )
    handle = submit(
        t, spark_settings, overrides={"topology.queue_batches": 4, "topology.socket_buffer_kb": 64}
    )
    handle.wait_for("ACTIVE", timeout=150)
    time.sleep(3)
    comps = handle.metrics()["components"]
    emitted, done = comps["nums"]["emitted"], comps["slow"]["executed"]
    # an unthrottled spout would emit millions of rows in 3 s; the bolt does ~25 batches/s
    assert emitted - done < 200 * 500, (emitted, done)
    assert comps["nums"]["instances"][0]["backpressure_ms"] > 1000, comps["nums"]
    assert comps["slow"]["capacity"] > 0.5, comps["slow"]
    for garbage in (
        b"\xc1 not msgpack",
        pack_message(5),
        pack_message({"cmd": "explode"}),
        pack_message({"cmd": "kill", "wait": "soon"}),
    ):
        assert "error" in raw_request(handle, garbage)  # answered, nothing else changes
    assert handle.status()["status"] == "ACTIVE"
    assert main(["topology", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "Topology_name",
        "Status",
        "Num_tasks",
        "Num_workers",
        "Uptime_secs",
        "Topology_Id",
        "Application",
        "Hosts",
        "Reason",
    ]
    assert out[1].split()[:4] == ["Slow[-1234]", "ACTIVE", "2", "1"]
    assert out[1].split()[6] == "Slow[-1234]"  # its own application (issue 14)
    assert out[1].split()[7] == "127.0.0.1*2"  # both instances on this machine
    assert main(["topology", "deactivate", "Slow[-1234]"]) == 0
    assert capsys.readouterr().out.strip() == "Slow[-1234]: INACTIVE"
    time.sleep(1.5)
    paused = handle.metrics()["components"]["nums"]["emitted"]
    time.sleep(1.5)
    assert handle.metrics()["components"]["nums"]["emitted"] == paused
    assert main(["topology", "activate", "Slow[-1234]"]) == 0
    poll(lambda: handle.metrics()["components"]["nums"]["emitted"] > paused)
    assert main(["topology", "kill", "Slow[-1234]", "-w", "1"]) == 0
    assert capsys.readouterr().out.strip().endswith("Slow[-1234]: KILLED")
    assert main(["topology", "list"]) == 0
    assert capsys.readouterr().out.strip() == "No topologies running."
    assert main(["topology", "kill", "Nope"]) == 1
    assert "no topology named 'Nope'" in capsys.readouterr().out


def test_bench_cli_counts_every_event_over_two_executors(spark_settings, monkeypatch, capsys):
    from cep.cli.main import main
    from topology.launcher import run_dir_name, topologies_dir

    monkeypatch.setenv("CEP_SPARK_STATE_DIR", spark_settings["spark.state_dir"])
    monkeypatch.setenv("CEP_TOPOLOGY_WORKERS", "2")  # 3 tasks over 2 executors of 2 cores
    assert (
        main(
            [
                "topology",
                "bench",
                "--events",
                "50000",
                "--grouping",
                "fields",
                "--start-timeout",
                "600",
                "--json",
            ]
        )
        == 0
    )
    launch = topologies_dir(spark_settings) / run_dir_name(f"TopologyBench[{os.getpid()}]")
    assert json.loads((launch / "launch.json").read_text())["executors"] == 2
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["events_sent"] == result["events_received"] == 50000
    assert (
        result["events_per_s"] > 0
        and 0 < result["latency_ms"]["p50"] <= result["latency_ms"]["p99"]
    )
    assert result["submit_to_active_s"] > 0  # measured (no threshold: a loaded machine)


def test_failing_component_makes_the_topology_failed_with_its_reason(spark_settings, cluster):
    t = Topology("Broken[-1234]")
    t.add_spout(
        "s",
        "topology.testing:BrokenSpout",
        outputs=["x"],
        config={"message": "cannot reach the source at 10.0.0.1:9"},
    )
    t.add_bolt("c", "topology.testing:CountBolt", inputs={"s": "shuffle"})
    handle = submit(
        t, spark_settings, overrides={"topology.max_stage_attempts": 1, "topology.max_restarts": 0}
    )
    with pytest.raises(WaitTimeoutError):
        handle.wait_for("ACTIVE", timeout=90)
    status = handle.wait_for("FAILED", timeout=30)
    assert status["reason"].startswith("RuntimeError: cannot reach the source at 10.0.0.1:9 (")
    assert "topology.max_restarts=0 per topology.restart_window_s=300" in status["reason"]
    poll(lambda: "Broken[-1234]" not in active_app_names(cluster), timeout=30)


def test_embedded_cluster_is_reused_by_another_process(spark_settings, cluster):
    code = (
        "import json; from topology.cluster import ensure_cluster;"
        "from topology.spark_settings import load_spark_settings as l;"
        f"i = ensure_cluster(l({{'spark.state_dir': {spark_settings['spark.state_dir']!r}}}));"
        "print(json.dumps([i.master_url, list(i.pids)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert json.loads(out) == [cluster.master_url, list(cluster.pids)]
    assert master_state(cluster.ui_url)["aliveworkers"] == 1


def test_cluster_status_cli(spark_settings, cluster, monkeypatch, capsys):
    from cep.cli.main import main

    monkeypatch.setenv("CEP_SPARK_STATE_DIR", spark_settings["spark.state_dir"])
    assert main(["topology", "cluster", "status"]) == 0
    out = capsys.readouterr().out
    assert f"master {cluster.master_url}" in out and "status ALIVE" in out and "/8 used" in out
    for pid in cluster.pids:  # the embedded master and worker, with spark.jvm_options
        assert b"-XX:TieredStopAtLevel=1" in jvm_of(pid)


def test_topology_fails_when_its_master_is_gone(spark_settings, cluster):
    """Last in this file: it stops the session cluster (the fixture restarts it on demand)."""
    handle = submit(
        counter_topology("Orphan[-1234]"), spark_settings, overrides={"topology.master_lost_s": 3.0}
    )
    handle.wait_for("ACTIVE", timeout=150)
    stop_cluster(spark_settings)
    status = handle.wait_for("FAILED", timeout=60)
    # the embedded cluster's master and worker are this machine's processes: their end is
    # seen at once (their pids), without waiting for master_lost_s of a silent web UI
    assert (
        status["reason"].startswith("the Spark master (")
        and "is gone: the embedded cluster's" in status["reason"]
    ), status["reason"]
    poll(lambda: not run_dir_alive(handle.run_dir), timeout=30)  # the driver exited
