"""Event validation: good events pass coerced, each bad event is rejected with its own reason."""

import pytest

from receivers.validation import EventValidator, IngestResult, MAX_REASONS


@pytest.fixture
def v(stock_def):
    return EventValidator(stock_def)


def test_exact_pairs_take_fast_path_and_become_tuples(v):
    good, errors = v.validate_pairs([[5, ["IBM", 1.5, 10, 3, True]], (6, ("X", 2.0, 1, 1, False))])
    assert errors == []
    assert good == [(5, ("IBM", 1.5, 10, 3, True)), (6, ("X", 2.0, 1, 1, False))]


def test_ints_widen_to_double_and_nulls_pass(v):
    good, errors = v.validate_pairs([[5, ["IBM", 7, None, None, None]]])
    assert errors == [] and good == [(5, ("IBM", 7.0, None, None, None))]
    assert type(good[0][1][1]) is float


def test_missing_timestamp_uses_now(v):
    good, _ = v.validate_pairs([[None, ["A", 1.0, 1, 1, True]]], now=1234)
    assert good[0][0] == 1234


@pytest.mark.parametrize(
    "row, fragment",
    [
        (["IBM", "cheap", 1, 1, True], "attribute 'price' (double): got 'cheap'"),
        (["IBM", 1.0, 1, 2**31, True], "attribute 'qty' (int): 2147483648 is out of range"),
        (["IBM", 1.0, 1.5, 1, True], "attribute 'volume' (long): got 1.5"),
        (["IBM", 1.0, 1, 1, 1], "attribute 'ok' (bool): got 1"),
        ([1, 1.0, 1, 1, True], "attribute 'symbol' (string): got 1"),
        (["IBM", True, 1, 1, True], "attribute 'price' (double): got True"),
        (["IBM", 1.0], "has 5 attributes (symbol, price, volume, qty, ok), event has 2 values"),
    ],
)
def test_bad_event_is_rejected_with_reason_and_neighbours_survive(v, row, fragment):
    ok = ["A", 1.0, 1, 1, True]
    good, errors = v.validate_pairs([[1, ok], [2, row], [3, ok]])
    assert [ts for ts, _ in good] == [1, 3]
    assert len(errors) == 1 and errors[0][0] == 1
    assert fragment in errors[0][1]


@pytest.mark.parametrize(
    "pair, fragment",
    [
        ("junk", "expected [timestamp, [values...]]"),
        ([-5, ["A", 1.0, 1, 1, True]], "must not be negative"),
        (["yesterday", ["A", 1.0, 1, 1, True]], "timestamp must be epoch milliseconds"),
        ([1, "A,1.0"], "event data must be an array"),
    ],
)
def test_malformed_pairs(v, pair, fragment):
    good, errors = v.validate_pairs([pair])
    assert good == [] and fragment in errors[0][1]


def test_json_forms(v):
    events = [
        {"stream": "StockStream", "timestamp": 10, "data": ["A", 1.0, 2, 3, True]},
        {"timestamp": 11, "data": {"symbol": "B", "price": 2, "volume": 1, "qty": 1, "ok": False}},
        {"symbol": "C", "price": 3.0},
        ["D", 4.0, 4, 4, True],
    ]
    good, errors = v.validate_json(events, now=99)
    assert errors == []
    assert good == [
        (10, ("A", 1.0, 2, 3, True)),
        (11, ("B", 2.0, 1, 1, False)),
        (99, ("C", 3.0, None, None, None)),
        (99, ("D", 4.0, 4, 4, True)),
    ]


def test_json_rejections_name_the_problem(v):
    good, errors = v.validate_json(
        [
            {"stream": "Other", "data": ["A", 1.0, 2, 3, True]},
            {"symbol": "A", "colour": "red"},
            "text",
            {"data": ["A", 1.0, 2, 3, True]},
        ]
    )
    assert len(good) == 1
    reasons = dict(errors)
    assert "names stream 'Other'" in reasons[0]
    assert "unknown attribute 'colour'" in reasons[1]
    assert "must be a JSON object or array, got string" in reasons[2]


def test_result_keeps_exact_counts_but_bounded_reasons():
    errors = [(i, "bad") for i in range(MAX_REASONS + 50)]
    r = IngestResult.of(3, errors)
    assert (r.accepted, r.rejected, len(r.errors)) == (3, MAX_REASONS + 50, MAX_REASONS)


# issue 11: values that used to be accepted and then killed the worker's forwarding thread
def _s_o_l():
    from cep.model import Attribute, AttrType, StreamDefinition

    return EventValidator(
        StreamDefinition(
            "S",
            (
                Attribute("s", AttrType.STRING),
                Attribute("o", AttrType.OBJECT),
                Attribute("x", AttrType.LONG),
            ),
        )
    )


@pytest.mark.parametrize(
    "pair,reason",
    [
        ([10**30, ["a", None, 1]], "outside 0..253402300799999"),
        ([2**63, ["a", None, 1]], "outside"),
        ([253402300800000, ["a", None, 1]], "outside"),
        ([1, ["\ud800", None, 1]], "'s' (string): not valid UTF-8"),
        ([1, ["a", {"k": ["\udc00"]}, 1]], "'o' (object): a string that is not valid UTF-8"),
        ([1, ["a", 2**70, 1]], "'o' (object): integer"),
    ],
)
def test_unencodable_events_are_rejected_with_a_reason(pair, reason):
    v = _s_o_l()
    good, errors = v.validate_pairs([[5, ["ok", None, 1]], pair, [253402300799999, ["é", 1, 2]]])
    assert good == [(5, ("ok", None, 1)), (253402300799999, ("é", 1, 2))]
    assert [i for i, _ in errors] == [1] and reason in errors[0][1]
    good, errors = v.validate_json([{"timestamp": pair[0], "data": pair[1]}])
    assert good == [] and reason in errors[0][1]
