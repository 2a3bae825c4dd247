"""`cep run`: output lines, bad input lines, --on-error, rejected plans."""

import json

from cep.cli.main import main

PLAN = """@Plan:playback
define stream S (sym string, price double);
from S[price > 10.0] select sym, price insert into Big;
from Big select sym, count() as c insert into Counts;
"""


def run(tmp_path, capsys, events, *flags, plan=PLAN):
    (tmp_path / "p.siddhiql").write_text(plan)
    (tmp_path / "e.jsonl").write_text("\n".join(events) + "\n")
    code = main(
        ["run", str(tmp_path / "p.siddhiql"), "--events", str(tmp_path / "e.jsonl"), *flags]
    )
    out, err = capsys.readouterr()
    return code, [json.loads(x) for x in out.splitlines()], err


def test_outputs_every_stream_the_input_does_not_feed(tmp_path, capsys):
    code, out, err = run(
        tmp_path,
        capsys,
        [
            '{"stream": "S", "timestamp": 1000, "data": ["A", 11.0]}',
            '{"stream": "S", "timestamp": 2000, "data": ["B", 1.0]}',
        ],
    )
    assert code == 0 and err == ""
    # as Siddhi 3.2 emits them: the query reading Big runs before Big's own callback
    assert out == [
        {"stream": "Counts", "timestamp": 1000, "data": ["A", 1], "expired": False},
        {"stream": "Big", "timestamp": 1000, "data": ["A", 11.0], "expired": False},
    ]


def test_a_streams_callback_comes_after_the_queries_that_read_it(tmp_path, capsys):
    """Siddhi 3.2's order (checked with the siddhi kit): the outputs of the queries reading an
    intermediate stream, in query order, then the intermediate stream's event, event by
    event."""
    plan = """@Plan:playback
define stream A (x int);
from A select x insert into B;
from B select x + 1 as y insert into C;
from B select x + 2 as z insert into D;
"""
    code, out, err = run(
        tmp_path,
        capsys,
        [
            '{"stream": "A", "timestamp": 1, "data": [1]}',
            '{"stream": "A", "timestamp": 2, "data": [5]}',
        ],
        plan=plan,
    )
    assert code == 0 and err == ""
    assert [(e["stream"], e["data"]) for e in out] == [
        ("C", [2]),
        ("D", [3]),
        ("B", [1]),
        ("C", [6]),
        ("D", [7]),
        ("B", [5]),
    ]


def test_bad_lines_are_reported_with_line_number_and_skipped(tmp_path, capsys):
    code, out, err = run(
        tmp_path,
        capsys,
        [
            '{"stream": "S", "timestamp": 1000, "data": ["A", 11.0]}',
            '{"stream": "S", "timestamp": 1001, "data": ["A"]}',
            "not json",
            '{"stream": "T", "timestamp": 1002, "data": ["A", 11.0]}',
            '{"stream": "S", "timestamp": 1003, "data": ["A", "x"]}',
            '{"stream": "S", "timestamp": 1004, "data": ["C", 12.0]}',
        ],
        "--on-error",
        "skip",
    )
    assert code == 0
    assert [e["data"][0] for e in out if e["stream"] == "Big"] == ["A", "C"]
    lines = err.strip().splitlines()
    assert [x.split(": ")[1] for x in lines] == ["line 2", "line 3", "line 4", "line 5"]
    assert "2 attributes" in lines[0] and "JSON" in lines[1] and "'T'" in lines[2]
    assert "price" in lines[3]


def test_on_error_fail_stops_with_exit_1(tmp_path, capsys):
    code, out, err = run(
        tmp_path,
        capsys,
        [
            '{"stream": "S", "timestamp": 1000, "data": ["A", 11.0]}',
            '{"stream": "S", "timestamp": 1001, "data": ["A"]}',
            '{"stream": "S", "timestamp": 1004, "data": ["C", 12.0]}',
        ],
        "--on-error",
        "fail",
    )
    assert code == 1 and "line 2" in err
    assert [e["data"][0] for e in out if e["stream"] == "Big"] == ["A"]


def test_a_rejected_plan_exits_2_with_its_position(tmp_path, capsys):
    code, out, err = run(
        tmp_path,
        capsys,
        [],
        plan="define stream S (a int);\nfrom S[b > 1] select a insert into O;\n",
    )
    assert code == 2 and out == []
    assert "line 2" in err and "'b'" in err


def test_clock_lines_advance_playback_time(tmp_path, capsys):
    plan = """define stream S (a int);
    from S#window.time(1 sec) select count() as c insert expired events into O;"""
    code, out, err = run(
        tmp_path,
        capsys,
        ['{"stream": "S", "timestamp": 1000, "data": [1]}', '{"timestamp": 2500}'],
        "--playback",
        plan=plan,
    )
    assert code == 0
    assert out == [{"stream": "O", "timestamp": 2500, "data": [0], "expired": False}]


def test_an_event_that_fails_in_processing_is_reported_not_raised():
    from cep.engine.offline import _feed

    class Handler:
        def send(self, data, ts):
            raise TypeError("'>' not supported between instances of 'str' and 'int'")

    class Runtime:
        def input_handler(self, stream):
            return Handler()

    problem = _feed(Runtime(), '{"stream": "S", "timestamp": 1, "data": ["x"]}', 1)
    assert problem.startswith("processing the event failed: TypeError")


def test_a_line_that_is_not_utf8_is_a_bad_line_and_crlf_ends_lines(tmp_path, capsys):
    """The events file is read as bytes: a line that is not UTF-8 is reported with its line
    number and byte, its neighbours go on; \\r\\n and \\r end lines as in a text-mode read."""
    (tmp_path / "p.siddhiql").write_text(PLAN)
    lines = [
        b'{"stream": "S", "timestamp": 1000, "data": ["A", 11.0]}',
        b'{"stream": "S", "timestamp": 1001, "data": ["\xff", 12.0]}',
        b'{"stream": "S", "timestamp": 1002, "data": ["C", 13.0]}',
        b'{"stream": "S", "timestamp": 1003, "data": ["D", 14.0]}',
    ]
    (tmp_path / "e.jsonl").write_bytes(
        lines[0] + b"\r\n" + lines[1] + b"\r\n" + lines[2] + b"\r" + lines[3] + b"\r\n"
    )
    code = main(["run", str(tmp_path / "p.siddhiql"), "--events", str(tmp_path / "e.jsonl")])
    out, err = capsys.readouterr()
    assert code == 0
    assert [
        json.loads(x)["data"][0] for x in out.splitlines() if json.loads(x)["stream"] == "Big"
    ] == ["A", "C", "D"]
    where = lines[1].index(b"\xff") + 1
    assert (
        err.strip() == f"{tmp_path / 'e.jsonl'}: line 2: not UTF-8 text: invalid start "
        f"byte at byte {where}"
    )
