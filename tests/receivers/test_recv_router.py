"""The ingest router: unknown streams, counters, refusals by a full downstream."""

import pytest

from receivers.exceptions import UnknownStreamError
from receivers.router import IngestRouter


def test_unknown_stream_is_a_named_error(router):
    with pytest.raises(UnknownStreamError, match="no stream 1/StockAnalysis/Nope"):
        router.ingest_pairs(("1", "StockAnalysis", "Nope"), [])


def test_counts_accepted_and_rejected(router, recorder, key):
    r = router.ingest_pairs(key, [[1, ["A", 1.0, 1, 1, True]], [2, ["A"]]])
    assert (r.accepted, r.rejected) == (1, 1)
    assert router.counters()["1/StockAnalysis/StockStream"] == {
        "accepted": 1,
        "rejected": 1,
        "refused": 0,
    }
    assert recorder.events == [(1, ("A", 1.0, 1, 1, True))]


def test_full_downstream_refusal_is_reported(stock_def, make_recorder, key):
    router = IngestRouter()
    router.register(key, stock_def, make_recorder(capacity=2))
    r = router.ingest_pairs(key, [[i, ["A", 1.0, 1, 1, True]] for i in range(5)])
    assert (r.accepted, r.rejected, r.refused) == (2, 0, 3)
    assert r.refused_indices == [2, 3, 4]  # the last ones: the buffer took a prefix
    assert r.to_dict()["reason"] == "backpressure" and r.to_dict()["retry"] is True
    assert router.counters()["1/StockAnalysis/StockStream"]["refused"] == 3


def test_unregister_plan(router):
    router.unregister_plan("1", "StockAnalysis")
    assert router.keys() == []
