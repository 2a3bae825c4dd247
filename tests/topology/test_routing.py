"""Groupings at run time and the stable hash."""

import subprocess
import sys

from topology.model import Grouping, Topology
from topology.routing import build_routes, split_batch, stable_hash
from topology.testing import CountBolt, ListSpout


def fanout(grouping, par=3):
    t = Topology("t")
    t.add_spout("s", ListSpout, outputs=["k", "v"])
    t.add_bolt("b", CountBolt, inputs={"s": grouping}, parallelism=par)
    return build_routes(t.validate(), "s"), t.task_ids()["b"]


def test_stable_hash_is_the_same_in_another_process():
    values = ["IBM", 42, ("a", 1.5), None]
    here = [stable_hash(v) for v in values]
    code = (
        "from topology.routing import stable_hash;"
        "print([stable_hash(v) for v in ['IBM', 42, ('a', 1.5), None]])"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
        check=True,
        cwd=str(__import__("pathlib").Path(__file__).parents[2]),
    )
    assert other.stdout.strip() == str(here)
    assert stable_hash(("a", 1.5)) == stable_hash(["a", 1.5])  # tuples and lists hash alike


def test_fields_grouping_keeps_equal_keys_together():
    routes, tasks = fanout(["k"])
    rows = [(f"key{i % 10}", i) for i in range(1000)]
    parts, bad = split_batch(routes, "default", rows)
    assert not bad
    owner = {}
    for task, part, _ in parts:
        assert task in tasks
        for k, _ in part:
            assert owner.setdefault(k, task) == task
    assert sum(len(p) for _, p, _ in parts) == 1000
    assert len({t for t, *_ in parts}) > 1


def test_fields_grouping_isolates_bad_rows():
    routes, _ = fanout(["v"])
    rows = [("a", 1), ("short",), ("b", 2), ("c", {1, 2})]
    parts, bad = split_batch(routes, "default", rows)
    assert sorted(r for _, p, _ in parts for r in p) == [("a", 1), ("b", 2)]
    assert [r for r, _ in bad] == [("short",), ("c", {1, 2})]


def test_fields_grouping_single_target_still_rejects_short_rows():
    routes, tasks = fanout(["v"], par=1)
    parts, bad = split_batch(routes, "default", [("a", 1), ("short",)])
    assert parts == [(tasks[0], [("a", 1)], None)] and len(bad) == 1


def test_shuffle_round_robins_whole_batches():
    routes, tasks = fanout("shuffle")
    got = [split_batch(routes, "default", [("x", i)])[0][0][0] for i in range(6)]
    assert got == tasks + tasks


def test_all_and_global():
    routes, tasks = fanout("all")
    assert [t for t, *_ in split_batch(routes, "default", [("x", 1)])[0]] == tasks
    routes, tasks = fanout(Grouping.global_())
    assert [t for t, *_ in split_batch(routes, "default", [("x", 1)])[0]] == [tasks[0]]


def test_memoised_buckets_equal_the_hash_and_keep_types_apart():
    routes, tasks = fanout(["k"], par=5)
    keys = ["a", 1, 1.0, True, "b", 2, ("x", 1), None] * 3
    rows = [(k, i) for i, k in enumerate(keys)]
    parts, bad = split_batch(routes, "default", rows)
    assert not bad
    where = {row: task for task, part, _ in parts for row in part}
    for k, i in rows:  # every row lands where the plain stable hash says, memo or not
        assert where[(k, i)] == tasks[stable_hash(k) % 5]
