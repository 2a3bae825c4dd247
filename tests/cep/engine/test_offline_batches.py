"""`cep run` sends consecutive events of a stream as one batch and encodes each output batch at
once: the output equals sending every event on its own (per stream, in order), on plans with
windows, aggregates, chains, rate limits, patterns and joins, with clock lines, bad lines and
stream switches in the file; where a batch could change the output (two queries into one
stream, partitions) events still go one at a time."""

import json
import random

import pytest

import cep
from cep.engine.offline import _decode_chunks, batchable, run_lines, single_reader

HEAD = (
    "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"
    "define stream T (sym string, qty int);\n"
)
PLANS = {
    "window aggregates": "from S#window.length(7) select sym, sum(price) as s, avg(vol) as a "
    "group by sym insert into Out;",
    "time batch": "from S#window.timeBatch(50 milliseconds) select sym, count() as c "
    "insert into Out;",
    "time window chain": "from S#window.time(30 milliseconds) select sym, max(price) as m "
    "insert into Mid; from Mid[m > 50.0] select sym, m insert into Out;",
    "rate limit": "from S select sym, price output last every 20 milliseconds insert into Out;",
    "pattern": "from every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price] within 40 "
    "milliseconds select e1.sym as sym, e2.price as p insert into Out;",
    "join": "from S#window.length(5) join T#window.length(5) on S.sym == T.sym "
    "select S.sym as sym, S.price as p, T.qty as q insert into Out;",
    "two queries, one output": "from S[price > 30.0] select sym, price insert into Out; "
    "from S[vol > 500] select sym, price insert into Out; "
    "from S#window.timeBatch(25 milliseconds) select sym, price "
    "insert into Out;",
    "partition": "partition with (sym of S) begin from S#window.length(3) select sym, "
    "sum(price) as s insert into Out; end;",
}


def lines(seed, n=600, odd=0.05, other=0.2):
    """Random lines: clock lines and bad lines (a share `odd` of them), events of T (a
    share `other`) and of S."""
    rnd = random.Random(seed)
    out, ts = [], 1000
    for i in range(n):
        ts += rnd.choice([0, 1, 3, 7, 20])
        r = rnd.random()
        if r < odd * 0.6:
            out.append(json.dumps({"timestamp": ts + 15}))
        elif r < odd:
            out.append(
                rnd.choice(
                    [
                        "not json",
                        '{"stream": "S", "timestamp": 1, "data": [1]}',
                        '{"stream": "S", "timestamp": 2, "data": ["A", "x", 1]}',
                        '{"stream": "Z", "timestamp": 3, "data": []}',
                    ]
                )
            )
        elif r < odd + other:
            out.append(
                json.dumps(
                    {
                        "stream": "T",
                        "timestamp": ts,
                        "data": [f"k{rnd.randrange(4)}", rnd.randrange(100)],
                    }
                )
            )
        else:
            out.append(
                json.dumps(
                    {
                        "stream": "S",
                        "timestamp": ts,
                        "data": [f"k{rnd.randrange(4)}", rnd.random() * 100, rnd.randrange(1000)],
                    }
                )
            )
    return out


def outputs(plan_text, text, batch):
    chunks, bad = [], []
    assert run_lines(cep.compile(HEAD + plan_text), text, chunks.append, bad.append, batch=batch)
    per = {}
    for line in "".join(chunks).splitlines():
        e = json.loads(line)
        per.setdefault(e["stream"], []).append(e)
    return per, [str(b) for b in bad]


@pytest.mark.parametrize("name", sorted(PLANS))
@pytest.mark.parametrize("seed", [1, 2])
def test_batched_run_equals_one_event_at_a_time(name, seed):
    text = lines(seed)
    got, got_bad = outputs(PLANS[name], text, True)
    want, want_bad = outputs(PLANS[name], text, False)
    assert got == want and got_bad == want_bad
    assert sum(map(len, want.values())) > 0 and want_bad


@pytest.mark.parametrize(
    "name", ["window aggregates", "join", "time window chain", "two queries, one output"]
)
def test_chunks_decoded_whole_and_line_by_line_mix_in_file_order(name):
    """Chunks of about 64 KiB without odd lines are decoded whole into checked rows; the
    chunks holding a bad line, a clock line or a blank line go line by line."""
    text = lines(3, n=4200, odd=0, other=0.3)
    text[1500] = "not json"
    text[2600] = json.dumps({"timestamp": 10**6})
    text[2601] = json.dumps({"stream": "S", "timestamp": 10**6 + 1, "data": ["k1", 1, 2]})
    text[3999] = ""
    data = "".join(x + "\n" for x in text).encode()
    segments = list(_decode_chunks(cep.compile(HEAD + PLANS[name]), data))
    assert len(segments) >= 4 and segments[-1][2] == len(data)
    for first, start, end, runs in segments:
        n = data[start:end].count(b"\n")
        assert data[:start].count(b"\n") == first
        assert (runs is None) == any(first <= i < first + n for i in (1500, 2600, 3999))
        if runs is not None:
            assert sum(len(pairs) for _, pairs in runs) == n
    got, got_bad = outputs(PLANS[name], text, True)
    want, want_bad = outputs(PLANS[name], text, False)
    assert got == want and got_bad == want_bad == [
        "line 1501: bad JSON: Expecting value at column 1"
    ]
    assert sum(map(len, want.values())) > 1000


def test_lines_a_whole_chunk_decode_would_misread_go_line_by_line():
    """A chunk decoded as one array would take two objects on one line (with a comma between)
    and, with one input stream, a line without "stream"; a blank line makes it invalid: such
    chunks are read line by line, so each line is what it is on its own (a bad line, a clock
    line)."""
    plan = cep.compile(
        "@Plan:playback\ndefine stream S (x long);\nfrom S select x insert into Out;"
    )
    ev = [json.dumps({"stream": "S", "timestamp": 1000 + i, "data": [i]}) for i in range(3000)]
    column = len(ev[100]) + 2  # where the second object starts
    ev[100] = ev[100] + " " + ev[101]
    ev[1500] = json.dumps({"timestamp": 1500, "data": [-1]})  # a clock line
    ev[2500] = "   "
    comma = len(ev[2800]) + 1
    ev[2800] = ev[2800] + "," + ev[2801]
    chunks, bad = [], []
    assert run_lines(plan, ev, chunks.append, bad.append)
    xs = [json.loads(x)["data"][0] for x in "".join(chunks).splitlines()]
    assert xs == [i for i in range(3000) if i not in (100, 1500, 2500, 2800)]
    assert [str(b) for b in bad] == [
        f"line 101: bad JSON: Extra data at column {column}",
        f"line 2801: bad JSON: Extra data at column {comma}",
    ]


def test_where_a_batch_could_change_the_output_events_go_one_by_one():
    def rt(plan_text):
        return cep.ExecutionPlanRuntime(cep.compile(HEAD + plan_text))

    assert single_reader(rt(PLANS["time window chain"]).junctions["S"])
    assert not single_reader(rt(PLANS["two queries, one output"]).junctions["S"])
    chain_fan = (
        "from S select sym, price insert into Mid; from Mid select sym insert into A; "
        "from Mid select price insert into B;"
    )
    assert not single_reader(rt(chain_fan).junctions["S"])
    assert not batchable(cep.compile(HEAD + PLANS["partition"]), "skip")
    assert not batchable(cep.compile(HEAD + PLANS["pattern"]), "fail")
    assert batchable(cep.compile(HEAD + PLANS["pattern"]), "skip")


def test_non_finite_doubles_are_written_as_json_tokens_nulls_as_null():
    plan = cep.compile(
        "@Plan:playback\ndefine stream S (x double, y double);\nfrom S select x, y insert into Out;"
    )
    text = [
        json.dumps({"stream": "S", "timestamp": 1, "data": [1.5, None]}),
        '{"stream": "S", "timestamp": 2, "data": [NaN, 1e400]}',
    ]
    chunks = []
    assert run_lines(plan, text, chunks.append, print)
    out = "".join(chunks).splitlines()
    assert json.loads(out[0])["data"] == [1.5, None]
    assert "NaN" in out[1] and "Infinity" in out[1]


def test_only_a_batch_holding_a_nan_or_an_infinity_is_written_by_json():
    """Huge finite doubles (their sum overflows) stay msgspec's compact JSON; a batch with
    -Infinity in it is written by json, and its finite values with it."""
    import msgspec

    plan = cep.compile(
        "@Plan:playback\ndefine stream S (x double, f float, n long);\n"
        "from S select x, f, n insert into Out;"
    )
    text = [
        json.dumps({"stream": "S", "timestamp": 1000 + i, "data": [1e308, 0.5, i]})
        for i in range(3000)
    ]
    text[2500] = '{"stream": "S", "timestamp": 3500, "data": [-1e400, 0.5, 2500]}'
    chunks = []
    assert run_lines(plan, text, chunks.append, print)
    out = "".join(chunks).splitlines()
    assert len(out) == 3000
    assert (
        out[0]
        == msgspec.json.encode(
            {"stream": "Out", "timestamp": 1000, "data": [1e308, 0.5, 0], "expired": False}
        ).decode()
    )
    assert json.loads(out[2500])["data"][0] == float("-inf") and "-Infinity" in out[2500]
    in_json = [i for i, x in enumerate(out) if "1e+308" in x]  # json's form: that batch
    batch = sorted(set(in_json) | {2500})
    assert in_json and len(batch) <= 1000 and batch == list(range(batch[0], batch[-1] + 1))


def test_a_stream_the_input_feeds_late_is_not_printed_before_its_first_line_either():
    """Which streams the input feeds is learnt chunk by chunk: a stream whose first input
    line comes after output was printed for it makes the run start again knowing it, with
    each bad line reported once."""
    plan = cep.compile(
        "@Plan:playback\ndefine stream S (x long);\n"
        "from S select x insert into Mid; "
        "from Mid select x * 2 as y insert into Out;"
    )
    ev = [json.dumps({"stream": "S", "timestamp": 1000 + i, "data": [i]}) for i in range(3000)]
    ev[10] = "not json"
    late = ev + [json.dumps({"stream": "Mid", "timestamp": 5000, "data": [-1]})]
    for text in (ev, late):
        chunks, bad = [], []
        assert run_lines(plan, text, chunks.append, bad.append)
        got = per_stream(chunks)
        want, want_bad = outputs_of(plan, text)
        assert got == want and [str(b) for b in bad] == want_bad == [
            "line 11: bad JSON: Expecting value at column 1"
        ]
    assert sorted(want) == ["Out"] and want["Out"][-1]["data"] == [-2]


def per_stream(chunks):
    per = {}
    for line in "".join(chunks).splitlines():
        e = json.loads(line)
        per.setdefault(e["stream"], []).append(e)
    return per


def outputs_of(plan, text):
    chunks, bad = [], []
    assert run_lines(plan, text, chunks.append, bad.append, batch=False)
    return per_stream(chunks), [str(b) for b in bad]


def test_what_ran_before_an_error_stopped_the_run_is_written(monkeypatch):
    from cep.engine.junction import InputHandler

    plan = cep.compile(
        "@Plan:playback\ndefine stream S (x long);\nfrom S select x insert into Out;"
    )
    ev = [json.dumps({"stream": "S", "timestamp": 1000 + i, "data": [i]}) for i in range(5000)]
    ev[10] = "not json"
    calls, send = [], InputHandler.send_events

    def failing(self, events):
        calls.append(len(events))
        if len(calls) == 3:
            raise KeyboardInterrupt
        send(self, events)

    monkeypatch.setattr(InputHandler, "send_events", failing)
    chunks, bad = [], []
    with pytest.raises(KeyboardInterrupt):
        run_lines(plan, ev, chunks.append, bad.append)
    xs = [json.loads(x)["data"][0] for x in "".join(chunks).splitlines()]
    n = len(xs) + 1  # the bad line
    assert 0 < len(xs) < 4999 and xs == [i for i in range(n) if i != 10]
    assert [str(b) for b in bad] == ["line 11: bad JSON: Expecting value at column 1"]
