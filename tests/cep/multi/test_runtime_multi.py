"""Joins, tables, patterns, sequences and partitions through the whole runtime (compiler ->
ExecutionPlanRuntime): snapshot/restore continues exactly, a batch gives the same output as its
events one at a time, idle keys are purged, bad plans are rejected with positioned errors."""

import random

import pytest

from cep.compiler import compile as compile_plan
from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import CepError, SiddhiQLError

TRADES = """@Plan:playback
define stream Trade (sym string, price double, qty int);
define stream Quote (sym string, bid double);
"""
PLANS = {
    "join": TRADES
    + """from Trade#window.time(2 sec) join Quote#window.length(4)
      on Trade.sym == Quote.sym and Trade.price > Quote.bid
    select Trade.sym as sym, Trade.price as price, Quote.bid as bid insert all events into Out;""",
    "pattern": TRADES
    + """from every e1=Trade -> e2=Quote[sym == e1.sym and bid > e1.price]
      within 3 sec
    select e1.sym as sym, e1.price as p, e2.bid as b insert into Out;""",
    "sequence": TRADES
    + """from every e1=Trade, e2=Trade[price > e1.price]+,
      e3=Trade[price < e2[last].price]
    select e1.price as start, e2[last].price as peak, e3.price as drop insert into Out;""",
    "table": TRADES
    + """@IndexBy('sym') define table Last (sym string, price double);
    from Trade select sym, price insert overwrite Last on Last.sym == sym;
    from Quote join Last on Quote.sym == Last.sym
    select Quote.sym as sym, Last.price - Quote.bid as spread insert into Out;""",
    "partition": TRADES
    + """partition with (sym of Trade, sym of Quote) begin
      from Trade#window.length(3) select sym, sum(qty) as total insert into Out;
      from every e1=Trade -> e2=Quote[bid > e1.price] select e1.sym as sym, e2.bid as b
      insert into Out2;
    end;""",
    "keyed": TRADES
    + """partition with (sym of Trade) begin
      from every e1=Trade -> e2=Trade[price > e1.price * 1.01] within 2 sec
      select e1.sym as sym, e1.price as p1, e2.price as p2 insert into Out;
    end;""",
}


def events(n=400, seed=7):
    rnd = random.Random(seed)
    out, ts = [], 1000
    for i in range(n):
        ts += rnd.choice([0, 10, 50, 200])
        sym = rnd.choice("ABCDE")
        if rnd.random() < 0.5:
            out.append(("Trade", ts, (sym, round(10 + rnd.random() * 10, 2), rnd.randint(1, 9))))
        else:
            out.append(("Quote", ts, (sym, round(10 + rnd.random() * 10, 2))))
    return out


def runtime(text):
    rt = ExecutionPlanRuntime(compile_plan(text))
    got = []
    for sid in ("Out", "Out2"):
        if sid in rt.junctions:
            rt.add_callback(sid, lambda b, sid=sid: got.extend((sid, t, r) for t, r in b))
    return rt, got


def feed(rt, evs, batched=False):
    if not batched:
        for sid, ts, row in evs:
            rt.input_handler(sid).send(row, ts)
        return
    i = 0
    while i < len(evs):  # runs of the same stream as one batch
        j = i
        while j < len(evs) and evs[j][0] == evs[i][0]:
            j += 1
        assert not rt.input_handler(evs[i][0]).send_batch([(ts, r) for _, ts, r in evs[i:j]])
        i = j


@pytest.mark.parametrize("kind", sorted(PLANS))
def test_restore_continues_exactly(kind):
    evs = events()
    whole, want = runtime(PLANS[kind])
    feed(whole, evs)
    assert want, "the workload must produce output for the test to mean anything"
    first, got = runtime(PLANS[kind])
    feed(first, evs[:200])
    blob = first.snapshot()
    second, more = runtime(PLANS[kind])
    second.restore(blob)
    feed(second, evs[200:])
    assert got + more == want


@pytest.mark.parametrize("kind", ["join", "pattern", "sequence", "table", "keyed"])
def test_batch_gives_the_output_of_one_at_a_time(kind):
    evs = events(seed=11)
    one, want = runtime(PLANS[kind])
    feed(one, evs)
    batch, got = runtime(PLANS[kind])
    feed(batch, evs, batched=True)
    assert got == want and want


def test_partition_batch_keeps_each_keys_order():
    evs = events(seed=5)
    one, want = runtime(PLANS["partition"])
    feed(one, evs)
    batch, got = runtime(PLANS["partition"])
    feed(batch, evs, batched=True)
    for sym in "ABCDE":
        assert [e for e in got if e[2][0] == sym] == [e for e in want if e[2][0] == sym]
    assert sorted(got) == sorted(want)


@pytest.mark.parametrize(
    "query",
    [
        "from Trade#window.length(2) select sym, sum(qty) as t insert into Out;",  # slot form
        "from Trade#window.time(1 sec) select sym, sum(qty) as t insert into Out;",  # cloned chains
        "from every e1=Trade, e2=Trade select e1.sym as sym insert into Out;",  # keyed machines
    ],
)
def test_purge_drops_idle_keys(query):
    text = TRADES + (
        "@purge(enable='true', interval='1 sec', idle.period='5 sec')\n"
        f"partition with (sym of Trade) begin {query} end;"
    )
    rt, _ = runtime(text)
    part = next(p for name, p in rt.ctx.stateful.items() if name.startswith("partition"))
    for i in range(50):
        rt.input_handler("Trade").send((f"K{i}", 1.0, 1), 1000 + i)
    assert len(part.last_seen) == 50
    rt.input_handler("Trade").send(("K0", 1.0, 1), 8000)
    rt.advance_time(9000)
    assert list(part.last_seen) == ["K0"]
    live = (
        part.fast.machines
        if part.fast is not None
        else part.slots.index
        if part.slots is not None
        else part.instances
    )
    assert list(live) == ["K0"]
    if part.slots is not None:  # the 49 purged keys' slots are free for new keys
        assert len(part.slots.free) == 49


def test_range_partition_sends_an_event_to_every_matching_range():
    text = (
        TRADES
        + """partition with (price < 15.0 as 'low' or price >= 12.0 as 'mid' of Trade)
    begin from Trade select sym, count() as n insert into Out; end;"""
    )
    rt, got = runtime(text)
    for ts, (sym, price) in enumerate([("A", 10.0), ("B", 13.0), ("C", 20.0), ("D", 11.0)]):
        rt.input_handler("Trade").send((sym, price, 1), 1000 + ts)
    assert [(r[0], r[1]) for _, _, r in got] == [("A", 1), ("B", 2), ("B", 1), ("C", 2), ("D", 3)]


def test_periodic_trigger_on_event_time():
    text = """@Plan:playback
    define trigger Tick at every 2 sec;
    define stream S (x int);
    from Tick select triggered_time as t insert into Out;"""
    rt, got = runtime(text)
    rt.input_handler("S").send((1,), 1000)
    rt.advance_time(6500)
    assert [r for _, _, r in got] == [(3000,), (5000,)]


@pytest.mark.parametrize(
    "text, word",
    [
        (
            TRADES + "define table T (sym string, price double);\n"
            "from every e1=T -> e2=Quote select e1.sym as s insert into Out;",
            "t",
        ),
        (TRADES + "from every e1=Trade -> e2=Quote select e3.sym as s insert into Out;", "e3"),
        (
            TRADES
            + "partition with (nope of Trade) begin from Trade select sym insert into Out; end;",
            "nope",
        ),
        (
            TRADES
            + "partition with (sym of Ghost) begin from Trade select sym insert into Out; end;",
            "ghost",
        ),
        (
            TRADES + "from Trade#window.length(2) join Missing on Trade.sym == Missing.sym "
            "select Trade.sym as s insert into Out;",
            "missing",
        ),
    ],
)
def test_bad_multi_stream_plans_are_rejected_with_a_position(text, word):
    with pytest.raises(CepError) as info:
        ExecutionPlanRuntime(compile_plan(text))
    err = info.value
    assert word in str(err).lower()
    assert isinstance(err, SiddhiQLError) and err.line > 0, f"no position: {err!r}"


@pytest.mark.parametrize("table_left", [False, True])
def test_indexed_table_join_is_one_generated_lookup_per_batch(table_left):
    sides = "L right outer join Quote" if table_left else "Quote left outer join L"
    text = (
        TRADES
        + f"""@PrimaryKey('sym') define table L (sym string, price double);
    from Trade select sym, price insert into L;
    from {sides} on L.sym == Quote.sym and L.price > Quote.bid
    select Quote.sym as s, L.price as p insert into Out;"""
    )
    rt, got = runtime(text)
    rt.input_handler("Trade").send_batch([(1, ("A", 10.0, 1)), (2, ("B", 20.0, 1))])
    join = next(p for n, p in rt.ctx.stateful.items() if "JoinProcessor" in n)
    stream_side = 1 if table_left else 0
    assert join.lookups[stream_side] is not None  # the generated whole-batch lookup
    rt.input_handler("Quote").send_batch(
        [(3, ("A", 5.0)), (4, ("A", 15.0)), (5, ("C", 1.0)), (6, ("B", 19.0))]
    )
    assert [r for _, _, r in got] == [("A", 10.0), ("A", None), ("C", None), ("B", 20.0)]


@pytest.mark.parametrize(
    "annotation, word",
    [
        ("@purge(enable='true', interval='soon', idle.period='1 hour')", "soon"),
        ("@purge(enable='true', interval='1 sec')", "idle.period"),
    ],
)
def test_bad_purge_annotation_is_rejected(annotation, word):
    text = (
        TRADES + f"{annotation}\npartition with (sym of Trade) begin "
        "from Trade select sym insert into Out; end;"
    )
    with pytest.raises(CepError, match=word):
        ExecutionPlanRuntime(compile_plan(text))


def test_pattern_condition_can_test_table_membership():
    text = (
        TRADES
        + """define table Watch (sym string);
    define stream Add (sym string);
    from Add insert into Watch;
    from every e1=Trade[(sym == Watch.sym) in Watch] -> e2=Quote[sym == e1.sym]
    select e1.sym as s, e2.bid as b insert into Out;"""
    )
    rt, got = runtime(text)
    rt.input_handler("Add").send(("A",), 1)
    for sid, ts, row in [
        ("Trade", 2, ("A", 1.0, 1)),
        ("Trade", 3, ("B", 1.0, 1)),
        ("Quote", 4, ("B", 2.0)),
        ("Quote", 5, ("A", 3.0)),
    ]:
        rt.input_handler(sid).send(row, ts)
    assert [r for _, _, r in got] == [("A", 3.0)]
