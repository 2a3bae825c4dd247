"""The in-process runner: exact results, groupings, error isolation, metrics."""
import collections

from topology.local import run_local
from topology.model import Topology
from topology.testing import CollectBolt, CountBolt, FailingBolt, ListSpout, SplitBolt

SENTENCES = [["the cat sat on the mat"], ["the dog ate the cat"], ["a b c a b a"]] * 50


def test_word_count_exact_with_fields_grouping():
    t = Topology("wc")
    t.add_spout("s", ListSpout, parallelism=2, outputs=["sentence"],
                config={"rows": SENTENCES, "batch_size": 7})
    t.add_bolt("split", SplitBolt, inputs={"s": "shuffle"}, parallelism=2, outputs=["word"])
    t.add_bolt("count", CountBolt, inputs={"split": ["word"]}, parallelism=3)
    result = run_local(t)
    expected = collections.Counter(w for (s,) in SENTENCES for w in s.split())
    counters = [c.counts for c in result.components["count"]]
    merged = collections.Counter()
    for counts in counters:
        assert not set(counts) & (set(merged)), "a word was counted by two instances"
        merged.update(counts)
    assert merged == expected
    m = result.metrics
    assert m["s"]["emitted"] == len(SENTENCES)
    assert m["count"]["executed"] == sum(expected.values())
    assert m["split"]["transferred"] == sum(expected.values())
    assert m["count"]["input_queue_depth"] == 0


def test_all_grouping_delivers_to_every_instance():
    t = Topology("t")
    t.add_spout("s", ListSpout, outputs=["x"], config={"rows": [[i] for i in range(10)]})
    t.add_bolt("c", CollectBolt, inputs={"s": "all"}, parallelism=3)
    result = run_local(t)
    assert [len(b.rows) for b in result.components["c"]] == [10, 10, 10]
    assert result.metrics["s"]["transferred"] == 30


def test_bad_row_fails_alone_and_neighbours_pass():
    t = Topology("t")
    t.add_spout("s", ListSpout, outputs=["x"],
                config={"rows": [[1], [2], ["bad"], [3]], "batch_size": 4})
    t.add_bolt("f", FailingBolt, inputs={"s": "shuffle"}, outputs=["x"], config={"bad": "bad"})
    t.add_bolt("c", CollectBolt, inputs={"f": "shuffle"})
    result = run_local(t)
    assert result.components["c"][0].rows == [(1,), (2,), (3,)]
    f = result.metrics["f"]
    assert f["failed"] == 1 and f["executed"] == 3
    assert "bad row value" in f["instances"][0]["last_error"]["error"]
