"""The in-process runner: exact results, groupings, error isolation, metrics."""

import collections

from topology.local import run_local
from topology.model import Topology
from topology.testing import CollectBolt, CountBolt, FailingBolt, ListSpout, SplitBolt

ACKS = []


class RecordingSpout(ListSpout):
    """ListSpout that records its ack/fail calls."""

    def ack(self, batch_id):
        ACKS.append(("ack", batch_id))

    def fail(self, batch_id, reason):
        ACKS.append(("fail", batch_id, reason))


SENTENCES = [["the cat sat on the mat"], ["the dog ate the cat"], ["a b c a b a"]] * 50


def test_word_count_exact_with_fields_grouping():
    t = Topology("wc")
    t.add_spout(
        "s",
        ListSpout,
        parallelism=2,
        outputs=["sentence"],
        config={"rows": SENTENCES, "batch_size": 7},
    )
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
    t.add_spout(
        "s", ListSpout, outputs=["x"], config={"rows": [[1], [2], ["bad"], [3]], "batch_size": 4}
    )
    t.add_bolt("f", FailingBolt, inputs={"s": "shuffle"}, outputs=["x"], config={"bad": "bad"})
    t.add_bolt("c", CollectBolt, inputs={"f": "shuffle"})
    result = run_local(t)
    assert result.components["c"][0].rows == [(1,), (2,), (3,)]
    f = result.metrics["f"]
    assert f["failed"] == 1 and f["executed"] == 3
    assert "bad row value" in f["instances"][0]["last_error"]["error"]


def test_spout_ack_per_routed_batch_and_fail_for_unroutable_rows():
    ACKS.clear()
    t = Topology("t")
    t.add_spout(
        "s",
        RecordingSpout,
        outputs=["k", "v"],
        config={"rows": [["a", 1], ["b", 2], ["short"], ["c", 3]], "batch_size": 2},
    )
    t.add_bolt("c", CollectBolt, inputs={"s": ["v"]}, parallelism=2)
    result = run_local(t)
    assert ACKS == [("ack", 1), ("fail", 2, "1 rows not routable"), ("ack", 2)]
    assert sorted(r for b in result.components["c"] for r in b.rows) == [
        ("a", 1),
        ("b", 2),
        ("c", 3),
    ]
    assert result.metrics["s"]["failed"] == 1 and result.metrics["s"]["acked"] == 2


def test_mermaid_with_metrics_shows_counts_and_capacity():
    t = Topology("wc")
    t.add_spout("s", ListSpout, outputs=["x"], config={"rows": [[1], [2]]})
    t.add_bolt("c", CollectBolt, inputs={("s", "default"): "global"})
    text = t.to_mermaid()
    from topology.draw import to_mermaid

    drawn = to_mermaid(t, run_local(t).metrics)
    assert 'c_s(["s x1<br/>2 events, capacity' in drawn and 'c_c["c x1<br/>2 events' in drawn
    assert 'c_s -->|"global"| c_c' in text
