"""Recovery time of a plan topology after a kill -9: of a task's Python worker, of the
executor JVM under it, or of the whole embedded Spark cluster (master and worker).

    .venv/bin/python benchmarks/recovery_bench.py --runs 3 \
        [--target siddhi|spout|publisher|executor|cluster]

Used by ``pipeline_bench.py --stage full --checkpoint-compare`` on its FullSystem (manager,
worker and an embedded Spark cluster running the BenchFilter plan): events flow at a steady
rate; once a checkpoint completed, the Siddhi bolt task's Python worker is killed, and the
breakdown is measured: kill -> the driver sees the failure (status leaves ACTIVE), -> ACTIVE
again (Spark re-ran the stage, every task restored the checkpoint), -> events reach the sink
again, -> the sink caught up with everything sent up to the kill (the replay is done; without
the workers' write-ahead logs events in flight at the kill are lost and this never happens,
reported as null).
"""

import json
import os
import signal
import threading
import time

TENANT, PLAN_NAME, STREAM = "-1234", "BenchFilter", "StockStream"


def _handle(system):
    return system.manager.plans.topologies.deployments[(-1234, PLAN_NAME)].handle


TARGETS = {
    "siddhi": ":SiddhiBolt",
    "spout": ":ReceiverSpout",
    "publisher": ":PublisherBolt",
    # the executor JVM hosting the first Siddhi bolt task (its Python workers die too)
    "executor": ":SiddhiBolt",
    # the embedded Spark master and worker (the executors end with their worker)
    "cluster": None,
}


def _task_pid(handle, target="siddhi"):
    """The Python worker pid of the first instance of the target component."""
    spec = json.loads((handle.run_dir / "spec.json").read_text())
    cid = next(c["id"] for c in spec["components"] if c["class"].endswith(TARGETS[target]))
    return handle.metrics()["components"][cid]["instances"][0]["pid"]


def _executor_pid(task_pid):
    """The executor JVM above a task's Python worker (worker -> pyspark daemon -> JVM)."""
    import psutil

    proc = psutil.Process(task_pid)
    while proc is not None and "java" not in proc.name():
        proc = proc.parent()
    if proc is None:
        raise RuntimeError(f"no JVM above task process {task_pid}")
    return proc.pid


def _kill_targets(system, handle, target):
    """The pids a run kills: one task's Python worker, its executor JVM, or the cluster."""
    if target == "cluster":
        from topology.spark_settings import state_dir

        info = json.loads((state_dir(system.launcher.settings) / "cluster.json").read_text())
        return list(info["pids"])
    pid = _task_pid(handle, target)
    return [_executor_pid(pid)] if target == "executor" else [pid]


def _plan_status(system):
    return system.manager.plans.status(-1234, PLAN_NAME)


def _wait(fn, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return time.monotonic()
        time.sleep(step)
    return None


def measure_recovery(system, rate=5000, timeout=120, target="siddhi"):
    """Seconds from the kill to: the driver seeing the failure (its task watch), the status
    leaving ACTIVE, the new stage attempt's first task report (restarted), ACTIVE again (every
    task restored), events at the sink again (flowing), the sink holding everything sent up
    to the kill (replay done)."""
    from receivers.zmq_receiver import ZmqEventClient

    handle = _handle(system)
    client = ZmqEventClient(system.worker.zmq_url, keys=system.keys)
    sent, stop = [0], threading.Event()

    def send():
        t0 = time.perf_counter()
        while not stop.is_set():
            due = int((time.perf_counter() - t0) * rate)
            if due > sent[0]:
                now = int(time.time() * 1000)
                client.send(
                    (TENANT, PLAN_NAME, STREAM),
                    [[now, ["IBM", 1.0, i]] for i in range(sent[0], due)],
                )
                sent[0] = due
            time.sleep(0.002)

    system.lat = None
    base_count, base_sent = system.count, 0
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        first = (handle.status().get("checkpoints") or {}).get("last", {}).get("id", 0)
        _wait(lambda: (handle.status()["checkpoints"].get("last") or {}).get("id", 0) > first, 60)
        restarts = handle.status()["restarts"]
        pids = _kill_targets(system, handle, target)
        killed, killed_wall = time.monotonic(), time.time()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        sent_at_kill = sent[0]
        if target == "cluster":  # a new application: follow the plan's status, not the handle
            detected = _wait(lambda: _plan_status(system)["state"] != "ACTIVE", timeout)
            restarted = None
            active = _wait(
                lambda: _handle(system) is not handle and _plan_status(system)["state"] == "ACTIVE",
                timeout,
            )
        else:
            detected = _wait(
                lambda: (
                    handle.status()["status"] != "ACTIVE" or handle.status()["restarts"] > restarts
                ),
                timeout,
            )
            restarted = _wait(lambda: handle.status()["restarts"] > restarts, timeout)
            active = _wait(
                lambda: (lambda s: s["status"] == "ACTIVE" and s["restarts"] > restarts)(
                    handle.status()
                ),
                timeout,
            )
        count_at_active = system.count
        flowing = _wait(lambda: system.count > count_at_active, timeout, 0.005)
        caught = _wait(lambda: system.count - base_count >= sent_at_kill - base_sent, 60)
        handle = _handle(system)
        status = handle.status()
    finally:
        stop.set()
        sender.join()
        client.close()

    def since(t):
        return round(t - killed, 2) if t else None

    seen = (status.get("timeline") or {}).get("failure_seen")
    return {
        "target": target,
        "kill_to_failure_seen_s": round(seen - killed_wall, 2)
        if seen and seen > killed_wall
        else None,
        "kill_to_detected_s": since(detected),
        "kill_to_restarted_s": since(restarted),
        "kill_to_active_s": since(active),
        "kill_to_flowing_s": since(flowing),
        "kill_to_caught_up_s": since(caught),
        "restored_from": status["checkpoints"].get("restored_from"),
        "sent_before_kill": sent_at_kill,
        "received": system.count - base_count,
    }


def main(argv=None):
    import argparse
    import statistics
    import sys
    import tempfile

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks.pipeline_bench import FullSystem

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--checkpoint-interval", type=float, default=5.0)
    ap.add_argument(
        "--target",
        choices=sorted(TARGETS),
        default="siddhi",
        help="what is killed: the first task of a component (siddhi, spout, "
        "publisher), the executor JVM of the first Siddhi task, or the "
        "embedded Spark master and worker (cluster)",
    )
    ap.add_argument(
        "--no-cds",
        action="store_true",
        help="start the JVMs without class-data sharing (spark.cds_dir off), to compare",
    )
    args = ap.parse_args(argv)
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
        f"{[round(x, 2) for x in os.getloadavg()]}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as root:
        system = FullSystem(
            root,
            checkpoint_interval=args.checkpoint_interval,
            spark={"spark.cds_dir": "off"} if args.no_cds else None,
        )
        try:
            runs = []
            for _ in range(args.runs):
                runs.append(measure_recovery(system, rate=args.rate, target=args.target))
                print(json.dumps(runs[-1]), flush=True)
        finally:
            system.close()
    keys = [k for k in runs[0] if k.startswith("kill_to_")]
    print(
        json.dumps(
            {
                "medians": {
                    k: statistics.median(r[k] for r in runs if r[k] is not None)
                    for k in keys
                    if any(r[k] is not None for r in runs)
                },
                "runs": len(runs),
                "load": [round(x, 2) for x in os.getloadavg()],
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
