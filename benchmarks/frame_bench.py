"""Frame codec benchmark (cep/protocol/frames.py): events per CPU-second of each hot-path
encoder/decoder on 1,000-event frames, medians of --runs rounds; prints JSON.

    .venv/bin/python benchmarks/frame_bench.py [--runs 15] [--events 1000]

CPU time (process_time), so other load on the machine matters less than for wall time.
`--baseline DIR` also times the same operations from an older checkout (e.g. a git worktree
of a commit before the codec moved to cep/protocol/frames.py) in the same process, interleaved, and reports
new/old ratios.
"""

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cep.protocol import frames as F  # noqa: E402


def operations(n):
    events = [[1700000000000 + i, [f"IBM{i % 50}", 75.5 + i, i]] for i in range(n)]
    rows = tuple((1700000000000 + i, "IBM", 75.5, i) for i in range(n))
    batch, logged = F.encode_batch("S", events), F.encode_batch("S", events, "w/1/P/S#a", 0)
    head, payload = F.header("S", "Bolt", 1.0, 0), F.encode_rows(rows)
    output = F.encode_output("Out", events, "T[1]:pub:0", 3, 0)
    return {
        "encode_batch": lambda: F.encode_batch("S", events),
        "spout_decode_v1": lambda: F.decode_logged_batch(batch, use_list=False),
        "spout_decode_v2": lambda: F.decode_logged_batch(logged, use_list=False),
        "publisher_decode_v3": lambda: F.decode_output(output),
        "task_send": lambda: (F.header("S", "Bolt", 1.0, 0), F.encode_rows(rows)),
        "task_receive": lambda: (F.decode_header(head), F.decode_rows(payload)),
    }, (events, rows, batch, head, payload)


def baseline_operations(root, data):
    """The copies from before the codec moved to cep.protocol (manager/registry/wire.py, topology/wire.py, the spout's
    decoder) loaded from an older checkout at `root`."""
    import msgpack

    def load(name, rel):
        spec = importlib.util.spec_from_file_location(name, os.path.join(root, rel))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    wire, topo = load("old_wire", "manager/registry/wire.py"), load("old_topo", "topology/wire.py")
    events, rows, batch, _, payload = data
    old_head = topo.header("S", "Bolt", 1.0, 0)

    def spout_decode(frame):
        return wire.check_frame(
            msgpack.unpackb(frame, raw=False, use_list=False, strict_map_key=False)
        )

    return {
        "encode_batch": lambda: wire.encode_batch("S", events),
        "spout_decode_v1": lambda: spout_decode(batch),
        "task_send": lambda: (topo.header("S", "Bolt", 1.0, 0), topo.pack(rows)),
        "task_receive": lambda: (topo.unpack(old_head), topo.unpack_rows(payload)),
    }


def rate(fn, n_events, reps=300):
    started = time.process_time()
    for _ in range(reps):
        fn()
    return reps * n_events / (time.process_time() - started)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--baseline", help="an older checkout to compare with")
    args = parser.parse_args(argv)
    ops, data = operations(args.events)
    old = baseline_operations(args.baseline, data) if args.baseline else {}
    samples = {k: ([], []) for k in ops}
    for _ in range(args.runs):
        for name, fn in ops.items():
            samples[name][0].append(rate(fn, args.events))
            if name in old:
                samples[name][1].append(rate(old[name], args.events))
    report = {}
    for name, (new, before) in samples.items():
        report[name] = {"events_per_cpu_s": round(statistics.median(new))}
        if before:
            report[name]["baseline"] = round(statistics.median(before))
            report[name]["ratio"] = round(statistics.median(new) / statistics.median(before), 3)
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
