"""Output delivery modes (issue 11): identities on the wire, duplicate counting at the sink set,
and the option checks (sink build and compiler)."""

import json

import pytest

import cep
from cep.errors import AnnotationError
from cep.protocol.exceptions import BadFrameError
from cep.protocol import frames
from publishers.delivery import Dedup
from publishers.exceptions import SinkConfigError
from cep.protocol.frames import Control, Identity
from publishers.sink_set import SinkSet
from publishers.sinks import build_sink


def rows(first, n):
    return [(1000 + i, (i,)) for i in range(first, first + n)]


def read(path):
    return (
        [json.loads(line)["data"][0] for line in path.read_text().splitlines()]
        if path.exists()
        else []
    )


def test_frames_carry_identity_and_notices():
    data = frames.encode_output("Out", [(1, [2])], "T:pub:0", 4, 10)
    assert frames.decode_output(data) == ("Out", ((1, (2,)),), Identity("T:pub:0", 4, 10))
    assert frames.decode_output(frames.encode_control("commit", "T:pub:0", 7)) == (
        None,
        None,
        Control("commit", "T:pub:0", 7),
    )
    plain = frames.decode_output(__import__("msgpack").packb([1, "Out", [[1, [2]]]]))
    assert plain == ("Out", ((1, (2,)),), None)
    with pytest.raises(BadFrameError, match="start|commit"):
        frames.decode_output(frames.encode_control("rollback", "T:pub:0", 7))
    with pytest.raises(BadFrameError, match="version 3"):
        frames.decode_output(__import__("msgpack").packb([3, "Out", [], "p", "x", 0]))


def test_dedup_finds_replayed_prefixes_only():
    d = Dedup()
    assert d.skip("S", Identity("p", 0, 0), 5) == 0
    assert d.skip("S", Identity("p", 0, 3), 5) == 2  # events 3, 4 seen; 5-7 new
    assert d.skip("S", Identity("p", 0, 0), 8) == 8
    assert d.skip("S", Identity("p", 2, 0), 1) == 0  # a later epoch is new
    assert d.skip("S", Identity("p", 0, 8), 1) == 1  # an older epoch after a newer one: seen
    assert d.skip("T", Identity("p", 0, 0), 1) == 0  # per stream
    d.restart("p", None)  # fresh state: identities begin again
    assert d.skip("S", Identity("p", 0, 0), 3) == 0


def test_at_least_once_counts_duplicates_and_drops_or_passes_them(tmp_path):
    specs = {
        "S": [
            {"type": "file", "options": {"path": str(tmp_path / "dedup.jsonl")}},
            {"type": "file", "options": {"path": str(tmp_path / "all.jsonl"), "dedup": "false"}},
            {
                "type": "file",
                "options": {"path": str(tmp_path / "amo.jsonl"), "delivery": "at-most-once"},
            },
        ]
    }
    sset = SinkSet.from_specs(specs, "t")
    sset.control(Control("start", "p", None))
    sset.dispatch("S", rows(0, 6), Identity("p", 0, 0))
    sset.dispatch("S", rows(6, 4), Identity("p", 3, 0))  # after barrier 3
    sset.control(Control("start", "p", 3))  # the bolt restored checkpoint 3: replay from there
    sset.dispatch("S", rows(6, 4), Identity("p", 3, 0))  # the same 4 results again
    sset.dispatch("S", rows(10, 2), Identity("p", 3, 4))
    assert read(tmp_path / "dedup.jsonl") == list(range(12))
    assert read(tmp_path / "all.jsonl") == list(range(10)) + [6, 7, 8, 9, 10, 11]
    assert read(tmp_path / "amo.jsonl") == read(tmp_path / "all.jsonl")
    assert sset.duplicates() == {"S": 4}
    assert [s["delivery"] for s in sset.metrics()["S"]["sinks"]] == [
        "at-least-once",
        "at-least-once",
        "at-most-once",
    ]
    sset.close()


def test_worker_default_delivery_applies_where_a_sink_names_none(tmp_path):
    sset = SinkSet.from_specs(
        {
            "S": [
                {"type": "file", "options": {"path": str(tmp_path / "a")}},
                {"type": "log", "options": {}},
            ]
        },
        "t",
        delivery="exactly-once",
    )
    kinds = [(s["type"], s["delivery"]) for s in sset.metrics()["S"]["sinks"]]
    assert kinds == [("file", "exactly-once"), ("log", "at-least-once")]  # log cannot stage
    sset.close()


@pytest.mark.parametrize(
    "spec, match",
    [
        (
            {"type": "http", "options": {"publisher.url": "http://x", "delivery": "exactly-once"}},
            r"@sink\(type='http'\) on stream S: delivery='exactly-once' needs a sink",
        ),
        (
            {"type": "file", "options": {"path": "x", "delivery": "twice"}},
            r"delivery='twice' is not one of",
        ),
        ({"type": "file", "options": {"path": "x", "dedup": "maybe"}}, r"dedup='maybe'"),
    ],
)
def test_bad_delivery_options_are_refused_naming_the_sink(spec, match):
    with pytest.raises(SinkConfigError, match=match):
        build_sink(spec, "S")


def test_compiler_refuses_exactly_once_on_a_log_sink_with_its_line():
    text = (
        "@Plan:name('P')\ndefine stream S (a int);\n\n"
        "@sink(type='log', delivery='exactly-once')\ndefine stream O (a int);\n"
        "from S select a insert into O;\n"
    )
    with pytest.raises(AnnotationError, match="type='log'.*stream 'O'.*exactly-once") as err:
        cep.compile(text)
    assert err.value.span.line == 4
    cep.compile(text.replace("type='log'", "type='file', path='o.jsonl'"))
    with pytest.raises(AnnotationError, match="delivery='sometimes'"):
        cep.compile(text.replace("exactly-once", "sometimes"))
