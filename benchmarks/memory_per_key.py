"""Memory per key of a partition holding a `length(5)` window: RSS per key, cloned instances
(the generic form) against the slot form (cep/engine/partition/slots.py).

    .venv/bin/python benchmarks/memory_per_key.py [--keys 100000,1000000] [--per-key 5]

Each measurement runs in a fresh Python process:
- `engine`: build the runtime of the plan below, collect garbage, read RSS; send `per-key`
  events to every key (rounds over all keys, batches of 1,000 events through send_batch, so
  every window is full at the end), drop the outputs as they come, collect garbage, read RSS
  again. The difference is the partition's state plus the events its windows hold.
- `events`: the events' own size, measured the same way: hold as many event tuples of the
  shape the windows hold, `(ts, (sym, price, vol), 0)`, each with its own timestamp, price
  and vol objects and one key string per key, in a list, and read the RSS difference (less
  the list's 8 bytes a reference, which the windows do not use).

Bytes per key beyond the held events = (engine difference - events difference) / keys.
The generic form is measured by switching the slot form off (slots.ENABLED = False)."""

import argparse
import gc
import json
import os
import subprocess
import sys
import time

PLAN = """@Plan:playback
define stream S (sym string, price double, vol long);
partition with (sym of S) begin from S#window.length(5) select sym, avg(price) as a
insert into Out; end;"""
BATCH = 1000


def _rss():
    import psutil

    gc.collect()
    return psutil.Process().memory_info().rss


def _events(keys, per_key):
    """The events in sending order: `per_key` rounds over all keys."""
    syms = [f"key{i}" for i in range(keys)]
    ts = 1000
    for r in range(per_key):
        for i, s in enumerate(syms):
            ts += 1
            yield ts, (s, 100.0 + (i * 7 + r) % 1000 / 8, i * 10 + r)


def measure_engine(keys, per_key, slot_form):
    import cep
    from cep.engine.partition import PartitionRuntime, slots

    slots.ENABLED = slot_form
    rt = cep.ExecutionPlanRuntime(cep.compile(PLAN))
    outputs = [0]
    rt.add_callback("Out", lambda evs: outputs.__setitem__(0, outputs[0] + len(evs)))
    h = rt.input_handler("S")
    part = next(p for p in rt.ctx.stateful.values() if isinstance(p, PartitionRuntime))
    before = _rss()
    t0, c0 = time.perf_counter(), time.process_time()
    batch = []
    for ev in _events(keys, per_key):
        batch.append(ev)
        if len(batch) == BATCH:
            h.send_batch(batch)
            batch = []
    if batch:
        h.send_batch(batch)
    cpu = time.process_time() - c0
    after = _rss()
    held = part.slots.key_count() if part.slots is not None else len(part.instances)
    return {
        "delta": after - before,
        "keys": held,
        "outputs": outputs[0],
        "form": "slots" if part.slots is not None else "cloned",
        "cpu_s": round(cpu, 2),
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def measure_events(keys, per_key):
    before = _rss()
    held = [(ts, row, 0) for ts, row in _events(keys, per_key)]
    after = _rss()
    return {"delta": after - before - 8 * len(held), "events": len(held)}


def _child(args):
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", default="100000,1000000")
    ap.add_argument("--per-key", type=int, default=5)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        job = json.loads(a.child)
        if job["what"] == "events":
            res = measure_events(job["keys"], job["per_key"])
        else:
            res = measure_engine(job["keys"], job["per_key"], job["what"] == "slots")
        print(json.dumps(res))
        return
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.uname().nodename}, "
        f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, load average "
        f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}; {a.per_key} events per key"
    )
    print(
        "| keys | form | RSS delta MiB | events' own MiB | bytes/key beyond events | "
        "CPU s to fill |"
    )
    print("|---|---|---|---|---|---|")
    for keys in [int(k) for k in a.keys.split(",")]:
        ev = _child({"what": "events", "keys": keys, "per_key": a.per_key})
        for form in ("cloned", "slots"):
            r = _child({"what": form, "keys": keys, "per_key": a.per_key})
            assert r["form"] == form and r["keys"] == keys, r
            beyond = (r["delta"] - ev["delta"]) / keys
            print(
                f"| {keys:,} | {form} | {r['delta'] / 2**20:,.1f} | "
                f"{ev['delta'] / 2**20:,.1f} | {beyond:,.0f} | {r['cpu_s']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
