"""Checkpoints through the in-process runner: consistent snapshots with two inputs, and a
Siddhi bolt restored from a checkpoint producing what an uninterrupted run produces."""

from tests.topology.checkpoint.ckpt_components import OffsetSpout, SeenBolt
from topology import Topology, run_local
from topology.checkpoint.store import FileStore
from topology.testing import CollectBolt

LEFT = [(i, "L") for i in range(300)]
RIGHT = [(i, "R") for i in range(300)]


def two_inputs(store_dir):
    t = Topology("Align[-1]")
    t.add_spout("left", OffsetSpout, outputs=["n", "side"], config={"rows": LEFT})
    t.add_spout("right", OffsetSpout, outputs=["n", "side"], config={"rows": RIGHT})
    t.add_bolt("seen", SeenBolt, inputs={"left": "shuffle", "right": "shuffle"})
    return t, FileStore(store_dir, t.name, "k")


def test_each_checkpoint_holds_exactly_what_came_before_every_barrier(tmp_path):
    topo, store = two_inputs(tmp_path)
    result = run_local(topo, store=store, checkpoint_every=4, stagger=2)
    done = store.completed()
    assert len(result.checkpoints) >= 5 and done == result.checkpoints[-3:]
    for cid in done:
        ids = topo.task_ids()
        left, right, seen = (store.read(cid, ids[c][0]) for c in ("left", "right", "seen"))
        # the bolt's snapshot: every row each spout emitted before its barrier, no more
        assert sorted(map(tuple, seen["rows"])) == sorted(
            LEFT[: left["pos"]] + RIGHT[: right["pos"]]
        )
        assert left["pos"] != right["pos"]  # the stagger made the bolt buffer one input
    spouts = result.components["left"] + result.components["right"]
    assert all(s.committed and s.committed[-1][0] == done[-1] for s in spouts)


def test_restore_puts_every_instance_back_to_the_same_checkpoint(tmp_path):
    topo, store = two_inputs(tmp_path)
    run_local(topo, store=store, checkpoint_every=4, stagger=1)
    last = store.completed()[-1]
    result = run_local(topo, store=store, restore=True)
    assert result.restored_from == last
    seen = result.components["seen"][0].rows
    assert sorted(seen) == sorted(LEFT + RIGHT)  # restored rows + the rest, once each


PLAN = """define stream S (k string, v int);
define stream W (k string, total long, n long);
define stream P (k string, first int, second int);"""
QUERIES = """from S#window.length(4) select k, sum(v) as total, count() as n group by k
insert into W;
partition with (k of S) begin
  from every a=S[v > 6] -> b=S[v < 3] select a.k as k, a.v as first, b.v as second
  insert into P;
end;"""


def siddhi_topology(rows):
    t = Topology("Siddhi[-1]")
    t.add_spout(
        "src",
        OffsetSpout,
        outputs={"S": ["ts", "k", "v"]},
        config={"rows": rows, "stream": "S", "batch_size": 7},
    )
    cfg = {
        "plan": "p",
        "tenant": -1,
        "group": "g",
        "queries": QUERIES,
        "inputs": [PLAN.splitlines()[0]],
        "outputs": PLAN.splitlines()[1:],
    }
    t.add_bolt(
        "cep",
        "cep.bolt:SiddhiBolt",
        inputs={("src", "S"): "shuffle"},
        outputs={"W": ["ts", "k", "total", "n"], "P": ["ts", "k", "first", "second"]},
        config=cfg,
    )
    t.add_bolt("outW", CollectBolt, inputs={("cep", "W"): "shuffle"})
    t.add_bolt("outP", CollectBolt, inputs={("cep", "P"): "shuffle"})
    return t


def test_siddhi_window_and_pattern_state_survive_a_restore(tmp_path):
    rows = [(1000 + i, f"k{i % 3}", (i * 7) % 10) for i in range(200)]
    topo = siddhi_topology(rows)
    full = run_local(topo)
    expected = (full.components["outW"][0].rows, full.components["outP"][0].rows)
    assert expected[0] and expected[1]
    store = FileStore(tmp_path, topo.name, "k")
    crashed = run_local(topo, store=store, checkpoint_every=5, max_batches=60)
    cid = store.completed()[-1]
    pos = store.read(cid, topo.task_ids()["src"][0])["pos"]
    assert 0 < pos < len(rows)
    # "crash": everything after checkpoint cid is lost; the restored run replays from pos
    before = (
        [r for r in expected[0] if r[0] < rows[pos][0]],
        [r for r in expected[1] if r[0] < rows[pos][0]],
    )
    resumed = run_local(topo, store=store, restore=True)
    assert resumed.restored_from == cid and crashed.checkpoints
    assert before[0] + resumed.components["outW"][0].rows == expected[0]
    assert before[1] + resumed.components["outP"][0].rows == expected[1]
