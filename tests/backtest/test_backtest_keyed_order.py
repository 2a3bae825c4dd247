"""The keyed task's order without Spark: events sorted by (key, timestamp, input, row) and fed
key after key through task.run_partition (with the per-query partition split of rewrite.py)
give, per key and stream, exactly `cep run --playback`'s output over the timestamp-merged
events. Conformance cases with partitions, and hypothesis over random data: ties in
timestamps, time-window expiry across batches, keys with one event, small batches."""

import dataclasses

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cep
from cep.backtest.planner import plan_mode
from cep.backtest.rewrite import split_partitions
from cep.backtest.task import TaskSpec, run_partition
from cep.model.queries import Partition
from tests.backtest.conftest import read_output
from tests.backtest.test_backtest_equality import CASES, merged
from tests.backtest.test_backtest_equality import reference as cep_run
from tests.conformance.conformance import load_case

PLAN = """@Plan:name('Prop')
define stream T (sym string, price double, qty int);
partition with (sym of T) begin
  from T[qty > 2]#window.time(3 sec) select sym, sum(price) as s, avg(price) as a, count() as n
  insert into W;
  from every e1=T -> e2=T[price > e1.price * 1.1] within 2 sec
  select e1.sym as sym, e1.price as p1, e2.price as p2 insert into J;
  from T#window.length(2) select sym, max(qty) as m insert into L;
end;
"""


def sorted_batches(events, order, key_attr, batch):
    """Arrow batches as the keyed job hands them to a task: (__k, __ts, __s, __seq) order."""
    rows = [
        (str(e["data"][key_attr[e["stream"]]]), e["timestamp"], order.index(e["stream"]), i, e)
        for i, e in enumerate(events)
    ]
    rows.sort(key=lambda r: r[:4])
    width = {sid: len(next(e["data"] for e in events if e["stream"] == sid)) for sid in order}
    cols = {
        "__ts": [r[1] for r in rows],
        "__s": [r[2] for r in rows],
        "__seq": [r[3] for r in rows],
        "__k": [r[0] for r in rows],
    }
    for s, sid in enumerate(order):
        for j in range(width[sid]):
            cols[f"c{s}_{j}"] = [r[4]["data"][j] if r[2] == s else None for r in rows]
    table = pa.table(cols)
    return table.to_batches(max_chunksize=batch), width


def run_keyed(plan_text, events, tmp_path, batch=7):
    plan = cep.compile(plan_text)
    order = list(dict.fromkeys(e["stream"] for e in events))
    mode = plan_mode(plan, set(order))
    assert mode.keyed, mode.reason
    names = {sid: [a.name for a in plan.stream(sid).attributes] for sid in order}
    key_attr = {sid: names[sid].index(mode.keys[sid]) if sid in mode.keys else 0 for sid in order}
    batches, width = sorted_batches(events, order, key_attr, batch)
    rt = cep.ExecutionPlanRuntime(plan, playback=True)
    exported = tuple(s for s in rt.junctions if s not in order)
    rt.shutdown()
    spec = TaskSpec(
        plan_text,
        tuple((sid, width[sid]) for sid in order),
        exported,
        str(tmp_path),
        "parquet",
        max(e["timestamp"] for e in events),
        1000,
        True,
    )
    list(run_partition(spec, iter(batches), 0))
    return {sid: read_output(str(tmp_path), sid) for sid in exported}


def reference(plan_text, events, tmp_path):
    """`cep run --playback` (its own code path) over the merged events."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    return cep_run({"plan": plan_text}, events, tmp_path)


def assert_per_key_equal(have, want, key_index=0):
    for sid in set(have) | set(want):
        h, w = have.get(sid, []), [(t, tuple(r)) for t, r in want.get(sid, [])]
        assert len(h) == len(w), f"{sid}: {len(h)} events, cep run gives {len(w)}"
        for k in {r[key_index] for _, r in w}:  # order within a key is kept
            assert [e for e in h if e[1][key_index] == k] == [
                e for e in w if e[1][key_index] == k
            ], f"{sid}, key {k!r}"


KEYED_CASES = [
    c for c in CASES if c[1].startswith(("085", "087", "095", "096", "097", "098", "099"))
]


def test_conformance_cases_key_after_key_equal_cep_run(tmp_path):
    for kind, name in KEYED_CASES:
        case = load_case(kind, name)
        order = list(dict.fromkeys(e["stream"] for e in case["input"]))
        events = merged(case, order)
        out = tmp_path / name
        have = run_keyed(case["plan"], events, out)
        want = reference(case["plan"], events, tmp_path / (name + "-ref"))
        for sid in set(have) | set(want):
            assert sorted(have.get(sid, []), key=repr) == sorted(want.get(sid, []), key=repr), (
                f"{name}: stream {sid}"
            )


def test_split_keeps_a_partition_whose_queries_feed_each_other():
    plan = cep.compile("""define stream S (k string, v int);
partition with (k of S) begin
  from S select k, v insert into A;
  from A[v > 1] select k, v insert into B;
end;""")
    assert split_partitions(plan).elements == plan.elements
    split = split_partitions(cep.compile(PLAN))
    assert [len(e.queries) for e in split.elements if isinstance(e, Partition)] == [1, 1, 1]


event = st.tuples(
    st.sampled_from(["a", "b", "c", "d", "e"]),
    st.integers(0, 2500),
    st.sampled_from([1.0, 1.5, 2.0, 2.25, 3.0, 0.1]),
    st.integers(0, 5),
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(event, min_size=1, max_size=60), st.integers(1, 9))
def test_random_events_key_after_key_equal_cep_run(tmp_path_factory, raw, batch):
    ts, events = 1000, []
    for sym, gap, price, qty in raw:  # gaps of 0 give ties; > 3 s gaps expire whole windows
        ts += gap if gap < 2000 else gap * 3
        events.append({"stream": "T", "timestamp": ts, "data": [sym, price, qty]})
    out = tmp_path_factory.mktemp("prop")
    assert_per_key_equal(run_keyed(PLAN, events, out, batch), reference(PLAN, events, out / "ref"))


def test_one_event_keys(tmp_path):
    events = [
        {"stream": "T", "timestamp": 1000 + i, "data": [f"k{i}", 1.0 + i, 5]} for i in range(20)
    ]
    assert_per_key_equal(
        run_keyed(PLAN, events, tmp_path / "o"), reference(PLAN, events, tmp_path / "ref")
    )
    assert dataclasses.is_dataclass(TaskSpec)
