"""Cost of one checkpoint of a Siddhi bolt, in process.

A Siddhi bolt runs a 10 s `time` window grouped by 50 keys in playback, filled with N events;
then its checkpoint is taken as a task does: the task thread's part (`checkpoint_state()`,
the engine's pickled snapshot under its lock, plus msgpack: the bolt waits for this), then the
writer thread's part (zlib level 1, CRC32, temp file, fsync, rename: the bolt goes on
meanwhile); the blob is also decoded. Medians of --runs.

--links: the data path's cost of barriers and alignment without Spark: counter spout ->
pass-through bolt (2 instances) -> counting bolt, each instance a TaskRunner thread on real
ZeroMQ links (one process, so they share the GIL), a test driver on the control channel;
events/s over --seconds with checkpoints off and every --interval s, alternating, medians.

    .venv/bin/python benchmarks/checkpoint_bench.py --events 20000 100000 --runs 5
    .venv/bin/python benchmarks/checkpoint_bench.py --links --interval 1 --runs 3
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cep.bolt import SiddhiBolt  # noqa: E402
from topology.checkpoint.store import FileStore, decode, encode, pack, seal  # noqa: E402
from topology.component import Batch, Collector, Context  # noqa: E402

OUT = {"W": ["ts", "k", "total", "n"]}
CONFIG = {
    "plan": "p",
    "tenant": -1,
    "group": "g",
    "playback": True,
    "inputs": ["define stream S (k string, v int);"],
    "outputs": ["define stream W (k string, total long, n long);"],
    "queries": "from S#window.time(10 sec) select k, sum(v) as total, count() as n "
    "group by k insert into W;",
}


def filled_bolt(n):
    bolt = SiddhiBolt(CONFIG)
    bolt.prepare(Context("bench", "cep", 0, 1, 0, OUT), Collector("cep", OUT))
    rows = [(1000 + i // 10, f"k{i % 50}", i % 10) for i in range(n)]
    for i in range(0, n, 1000):
        bolt.execute(Batch(rows[i : i + 1000], "S"))
        bolt.collector.take()
    return bolt


def measure(n, runs):
    """The task thread's part (checkpoint_state + pack: what the bolt waits for) and the
    writer thread's part (seal + atomic write with fsync), as the Participant splits them."""
    import tempfile

    bolt = filled_bolt(n)
    enc, dec, sync, write = [], [], [], []
    with tempfile.TemporaryDirectory() as root:
        store = FileStore(root, "bench", "k")
        try:
            for i in range(runs):
                t0 = time.perf_counter()
                state = bolt.checkpoint_state()
                packed = pack(state)
                t1 = time.perf_counter()
                blob = seal(packed)
                store.write_blob(i + 1, 0, blob)
                t2 = time.perf_counter()
                blob2 = encode(state)
                t3 = time.perf_counter()
                decode(blob2, "bench")
                t4 = time.perf_counter()
                sync.append(t1 - t0)
                write.append(t2 - t1)
                enc.append(t3 - t2)
                dec.append(t4 - t3)
        finally:
            bolt.cleanup()
    ms = lambda xs: round(statistics.median(xs) * 1000, 1)  # noqa: E731
    return {
        "window_events": n,
        "task_thread_ms": ms(sync),
        "writer_thread_ms": ms(write),
        "encode_ms": ms(enc),
        "decode_ms": ms(dec),
        "blob_bytes": len(blob),
        "engine_bytes": len(state["engine"]),
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def links_rate(interval, seconds, root):
    """events/s through spout -> pass x2 -> count on TaskRunner threads; checkpoints every
    ``interval`` s (0: off)."""
    import threading
    import zmq
    from cep.protocol.frames import pack_message, unpack_message
    from topology.model import Topology
    from topology.task import TaskRunner

    t = Topology(f"links-{interval}-{time.monotonic_ns()}")
    t.add_spout("s", "topology.testing:CounterSpout", outputs=["n"], config={"batch_size": 1000})
    t.add_bolt(
        "pass",
        "topology.testing:SlowBolt",
        inputs={"s": "shuffle"},
        parallelism=2,
        outputs=["n"],
        config={"sleep_ms": 0},
    )
    t.add_bolt("count", "topology.testing:CountBolt", inputs={"pass": "shuffle"})
    ctx = zmq.Context()
    pub, pull = ctx.socket(zmq.PUB), ctx.socket(zmq.PULL)
    driver = {
        "tasks": f"tcp://127.0.0.1:{pub.bind_to_random_port('tcp://127.0.0.1')}",
        "reports": f"tcp://127.0.0.1:{pull.bind_to_random_port('tcp://127.0.0.1')}",
    }
    options = {
        "host": "127.0.0.1",
        "queue_batches": 64,
        "socket_buffer": 262144,
        "metrics_interval_s": 0.5,
        "idle_sleep_ms": 1.0,
        "checkpoint": {"interval": interval, "dir": root, "name": t.name, "key": "k"},
    }
    runners = [TaskRunner(t, task, driver, options) for task in range(len(t.tasks()))]
    endpoints = [r.bind("127.0.0.1") for r in runners]
    threads = []
    for runner in runners:
        runner.attempt = 1
        runner.connect(endpoints)
        threads.append(threading.Thread(target=lambda r=runner: (r.run(), r.close()), daemon=True))
        threads[-1].start()
    count = runners[t.task_ids()["count"][0]].instance
    message = {"state": "active", "seq": 1, "restore": [1, None], "completed": None}
    cid, acks, started, next_ckpt = 0, {}, None, time.monotonic() + interval
    while started is None or time.monotonic() - started < seconds:
        if interval and time.monotonic() >= next_ckpt:
            cid, next_ckpt = cid + 1, time.monotonic() + interval
        pub.send(pack_message(dict(message, checkpoint=cid or None)))
        while pull.poll(5):
            report = unpack_message(pull.recv())
            if report["type"] == "checkpoint":
                acks.setdefault(report["id"], set()).add(report["task"])
        if started is None and count.metrics.received > 0:
            started, base = time.monotonic(), count.metrics.received
    rate = (count.metrics.received - base) / (time.monotonic() - started)
    pub.send(pack_message(dict(message, state="stop")))
    for _ in range(20):
        pub.send(pack_message(dict(message, state="stop")))
        time.sleep(0.05)
    for thread in threads:
        thread.join(5)
    ctx.destroy(linger=0)
    complete = sum(1 for tasks in acks.values() if len(tasks) == len(runners))
    return rate, complete


def run_links(args):
    import tempfile

    rates = {"off": [], "on": []}
    complete = []
    with tempfile.TemporaryDirectory() as root:
        for i in range(args.runs):
            for name in ("off", "on") if i % 2 == 0 else ("on", "off"):
                rate, done = links_rate(args.interval if name == "on" else 0, args.seconds, root)
                rates[name].append(rate)
                if name == "on":
                    complete.append(done)
    off, on = (statistics.median(rates[k]) for k in ("off", "on"))
    print(
        json.dumps(
            {
                "stage": "links",
                "interval_s": args.interval,
                "seconds": args.seconds,
                "off_events_per_s": int(off),
                "on_events_per_s": int(on),
                "on_vs_off": round(on / off, 3),
                "checkpoints_completed": complete,
                "off_runs": [int(r) for r in rates["off"]],
                "on_runs": [int(r) for r in rates["on"]],
                "load": [round(x, 2) for x in os.getloadavg()],
            }
        ),
        flush=True,
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, nargs="+", default=[20000, 100000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--links", action="store_true", help="data path with/without checkpoints")
    ap.add_argument("--interval", type=float, default=1.0, help="--links: checkpoint interval")
    ap.add_argument("--seconds", type=float, default=5.0, help="--links: measuring time per run")
    args = ap.parse_args(argv)
    if args.links:
        run_links(args)
        return
    for n in args.events:
        print(json.dumps(measure(n, args.runs)), flush=True)


if __name__ == "__main__":
    main()
