"""One small plan per construct family that WSO2 CEP 4.0's own sample and integration-test
execution plans use, run through `cep run`'s code path on a few events; the expected output of
each was produced by the real Siddhi 3.2.15 (the siddhi kit's `siddhi-run`) on the same plan and
events, and is stored here, so the suite needs no kit. The plans are written for these tests
(CEP 4.0's own plan text is not copied). Outputs are compared stream by stream: `cep run` sends
consecutive events of a stream as a batch, so the order across streams may differ from
Siddhi's event-by-event order (see docs/migrating.md)."""

import json
import math

import pytest

import cep
from cep.engine.offline import run

CASES = {}

CASES["annotations"] = dict(
    doc=(
        "@Plan name/description/trace, @Import/@Export with versions, @info/@name/@dist on "
        "queries, and a query without select (CEP 4.0 samples 0101, 0117, 0501, 0504, "
        "busBatchProcessor)"
    ),
    plan="""@Plan:name('MeterPlan') @Plan:description('meters in, alerts out') @Plan:trace('false')
@Plan:playback
@Import('meter.readings:2.1.0')
define stream Readings (meter string, kwh double, site int);
@Export('meter.alerts:1.0.0')
define stream Alerts (meter string, kwh double);
@info(name = 'high') @dist(parallel = '2', execGroup = 'g1')
from Readings[kwh >= 5.0 and site != 3]
select meter, kwh
insert into Alerts;
@name('copy')
from Alerts insert into Copied;
""",
    events=[
        {"stream": "Readings", "timestamp": 1000, "data": ["m1", 7.5, 1]},
        {"stream": "Readings", "timestamp": 1010, "data": ["m2", 2.0, 1]},
        {"stream": "Readings", "timestamp": 1020, "data": ["m3", 9.0, 3]},
        {"stream": "Readings", "timestamp": 1030, "data": ["m4", 5.0, 2]},
    ],
    expect={
        "Copied": [
            (1000, ["m1", 7.5]),
            (1030, ["m4", 5.0]),
        ],
        "Alerts": [
            (1000, ["m1", 7.5]),
            (1030, ["m4", 5.0]),
        ],
    },
)

CASES["time_windows"] = dict(
    doc=(
        "#window.time with group by and a qualified attribute, `insert current events`; "
        "#window.timeBatch with `insert all events` (samples 0102, 0104)"
    ),
    plan="""@Plan:playback
define stream Temp (dev long, room int, t double);
from Temp#window.time(30 sec)
select room, Temp.t as latest, avg(t) as mean
group by room
insert current events into Moving;
from Temp#window.timeBatch(20 sec)
select room, max(t) as peak, count() as n
group by room
insert all events into PerBatch;
""",
    events=[
        {"stream": "Temp", "timestamp": 1000, "data": [1, 10, 20.0]},
        {"stream": "Temp", "timestamp": 5000, "data": [2, 10, 24.0]},
        {"stream": "Temp", "timestamp": 9000, "data": [3, 11, 30.0]},
        {"stream": "Temp", "timestamp": 26000, "data": [4, 10, 22.0]},
        {"stream": "Temp", "timestamp": 37000, "data": [5, 11, 31.0]},
        {"stream": "Temp", "timestamp": 45000, "data": [6, 10, 18.0]},
        {"timestamp": 90000},
    ],
    expect={
        "Moving": [
            (1000, [10, 20.0, 20.0]),
            (5000, [10, 24.0, 22.0]),
            (9000, [11, 30.0, 30.0]),
            (26000, [10, 22.0, 22.0]),
            (37000, [11, 31.0, 30.5]),
            (45000, [10, 18.0, 20.0]),
        ],
        "PerBatch": [
            (5000, [10, 24.0, 2]),
            (9000, [11, 30.0, 1]),
            (26000, [10, 22.0, 1]),
            (37000, [11, 31.0, 1]),
            (45000, [10, 18.0, 1]),
            (90000, [11, None, 0]),
            (90000, [10, None, 0]),
        ],
    },
)

CASES["external_time"] = dict(
    doc=("#window.externalTime(ts, 1 min) with group by count/sum feeding a filter (sample 0114)"),
    plan="""@Plan:playback
define stream Tx (ts long, card string, amount double);
from Tx#window.externalTime(ts, 1 min)
select card, count(card) as n, sum(amount) as total
group by card
insert current events into PerCard;
from PerCard[n > 1] select card, n, total insert into Suspicious;
""",
    events=[
        {"stream": "Tx", "timestamp": 1, "data": [1000, "c1", 10.0]},
        {"stream": "Tx", "timestamp": 2, "data": [20000, "c2", 5.0]},
        {"stream": "Tx", "timestamp": 3, "data": [50000, "c1", 7.5]},
        {"stream": "Tx", "timestamp": 4, "data": [70000, "c1", 1.0]},
        {"stream": "Tx", "timestamp": 5, "data": [130000, "c1", 2.0]},
        {"stream": "Tx", "timestamp": 6, "data": [131000, "c2", 4.0]},
    ],
    expect={
        "PerCard": [
            (1, ["c1", 1, 10.0]),
            (2, ["c2", 1, 5.0]),
            (3, ["c1", 2, 17.5]),
            (4, ["c1", 2, 8.5]),
            (5, ["c1", 1, 2.0]),
            (6, ["c2", 1, 4.0]),
        ],
        "Suspicious": [
            (3, ["c1", 2, 17.5]),
            (4, ["c1", 2, 8.5]),
        ],
    },
)

CASES["patterns"] = dict(
    doc=(
        "`every a -> b[...] within 1 day` and a three-state pattern reading earlier states "
        "(samples 0103, 0104, 0108)"
    ),
    plan="""@Plan:playback
define stream Atm (card string, amount double, place string);
define stream Quote (sym string, price double);
from every a=Atm[amount < 50] -> b=Atm[amount > 5000 and a.card == b.card] within 1 day
select a.card as card, a.amount as small, b.amount as big, b.place as place
insert into Fraud;
from every q1=Quote[price > 20] -> q2=Quote[sym == q1.sym and price > q1.price] -> q3=Quote[sym == q1.sym and price > q2.price]
select q1.sym as sym, q1.price as p1, q2.price as p2, q3.price as p3
insert into Rising;
""",
    events=[
        {"stream": "Atm", "timestamp": 1000, "data": ["c1", 20.0, "A"]},
        {"stream": "Atm", "timestamp": 2000, "data": ["c2", 10.0, "B"]},
        {"stream": "Atm", "timestamp": 3000, "data": ["c1", 9000.0, "C"]},
        {"stream": "Atm", "timestamp": 90000000, "data": ["c2", 8000.0, "D"]},
        {"stream": "Quote", "timestamp": 1000, "data": ["X", 21.0]},
        {"stream": "Quote", "timestamp": 1001, "data": ["Y", 30.0]},
        {"stream": "Quote", "timestamp": 1002, "data": ["X", 22.0]},
        {"stream": "Quote", "timestamp": 1003, "data": ["X", 21.5]},
        {"stream": "Quote", "timestamp": 1004, "data": ["X", 25.0]},
        {"stream": "Quote", "timestamp": 1005, "data": ["Y", 31.0]},
    ],
    expect={
        "Fraud": [
            (3000, ["c1", 20.0, 9000.0, "C"]),
        ],
        "Rising": [
            (1004, ["X", 21.0, 22.0, 25.0]),
        ],
    },
)

CASES["expired_or"] = dict(
    doc=(
        "`insert expired events` from a time window feeding a pattern with `or`, then `is null` "
        "on the absent side (sample 0111)"
    ),
    plan="""@Plan:playback
define stream Arrivals (id string, who string);
define stream Deliveries (id string, by string);
from Arrivals#window.time(2 min) select * insert expired events into Overdue;
from every a=Arrivals -> d=Deliveries[a.id == id] or o=Overdue[a.id == id]
select a.id as id, a.who as who, d.id as delivered
insert into Outcome;
from Outcome[delivered is null] select id, who insert into Late;
""",
    events=[
        {"stream": "Arrivals", "timestamp": 1000, "data": ["p1", "ann"]},
        {"stream": "Arrivals", "timestamp": 2000, "data": ["p2", "bob"]},
        {"stream": "Deliveries", "timestamp": 30000, "data": ["p1", "van"]},
        {"timestamp": 200000},
        {"stream": "Arrivals", "timestamp": 201000, "data": ["p3", "cy"]},
    ],
    expect={
        "Outcome": [
            (30000, ["p1", "ann", "p1"]),
            (200000, ["p2", "bob", None]),
        ],
        "Late": [
            (200000, ["p2", "bob"]),
        ],
        "Overdue": [
            (200000, ["p1", "ann"]),
            (200000, ["p2", "bob"]),
        ],
    },
)

CASES["tables"] = dict(
    doc=(
        "in-memory tables: insert, update on, delete on, a join whose having reads the table "
        "side, a unidirectional join, `not (... in Table)` (samples 0106, 0107, 0116)"
    ),
    plan="""@Plan:playback
define stream Users (name string, card string, banned bool);
define stream Ban (card string);
define stream Buy (price double, card string);
define stream Wipe (all bool);
define stream Orders (who string, t string);
define table UserTable (name string, card string, banned bool);
define table Seen (who string, times long, last string);
from Users select * insert into UserTable;
from Ban select card, true as banned update UserTable on card == UserTable.card;
from Buy#window.length(1) as b join UserTable as u on b.card == u.card
select b.card as card, u.name as name, b.price as price
having u.banned == false
insert into Allowed;
from Wipe delete UserTable on all == true;
from Orders unidirectional join Seen on Seen.who == Orders.who
select Orders.who as who, Seen.times as times, Seen.last as last
insert into Returning;
from Returning select times + 1 as times, who update Seen on Seen.who == who;
from Orders[not ((Orders.who == Seen.who) in Seen)]
select who, 1L as times, t as last
insert into Seen;
""",
    events=[
        {"stream": "Users", "timestamp": 1000, "data": ["ann", "c1", False]},
        {"stream": "Users", "timestamp": 1001, "data": ["bob", "c2", False]},
        {"stream": "Buy", "timestamp": 1002, "data": [10.0, "c1"]},
        {"stream": "Ban", "timestamp": 1003, "data": ["c1"]},
        {"stream": "Buy", "timestamp": 1004, "data": [11.0, "c1"]},
        {"stream": "Buy", "timestamp": 1005, "data": [12.0, "c2"]},
        {"stream": "Wipe", "timestamp": 1006, "data": [True]},
        {"stream": "Buy", "timestamp": 1007, "data": [13.0, "c2"]},
        {"stream": "Orders", "timestamp": 1008, "data": ["zed", "t1"]},
        {"stream": "Orders", "timestamp": 1009, "data": ["zed", "t2"]},
        {"stream": "Orders", "timestamp": 1010, "data": ["amy", "t3"]},
        {"stream": "Orders", "timestamp": 1011, "data": ["zed", "t4"]},
    ],
    expect={
        "Allowed": [
            (1002, ["c1", "ann", 10.0]),
            (1005, ["c2", "bob", 12.0]),
        ],
        "Returning": [
            (1009, ["zed", 1, "t1"]),
            (1011, ["zed", 2, "t1"]),
        ],
    },
)

CASES["rate_and_partitions"] = dict(
    doc=(
        "`output last every 3 events`; value partitions with a time window and having, and with "
        "lengthBatch into an inner stream (samples 0113, 0115, 0504)"
    ),
    plan="""@Plan:playback
define stream Logins (user string, ip string);
define stream Words (company string, n int);
define stream Stats (user string, ts long);
from Logins select ip output last every 3 events insert into LastIp;
partition with (company of Words)
begin
  from Words#window.time(1 min) select company, sum(n) as words having words > 10 insert into Busy;
end;
partition with (user of Stats)
begin
  from Stats#window.lengthBatch(2) select user, max(ts) as latest, min(ts) as earliest insert into #Span;
  from #Span select user, latest - earliest as gap insert into Gaps;
end;
""",
    events=[
        {"stream": "Logins", "timestamp": 1000, "data": ["u1", "10.0.0.1"]},
        {"stream": "Logins", "timestamp": 1001, "data": ["u2", "10.0.0.2"]},
        {"stream": "Logins", "timestamp": 1002, "data": ["u1", "10.0.0.3"]},
        {"stream": "Logins", "timestamp": 1003, "data": ["u3", "10.0.0.4"]},
        {"stream": "Words", "timestamp": 2000, "data": ["acme", 6]},
        {"stream": "Words", "timestamp": 3000, "data": ["initech", 4]},
        {"stream": "Words", "timestamp": 4000, "data": ["acme", 7]},
        {"stream": "Words", "timestamp": 70000, "data": ["acme", 5]},
        {"stream": "Words", "timestamp": 71000, "data": ["initech", 9]},
        {"stream": "Stats", "timestamp": 80000, "data": ["a", 100]},
        {"stream": "Stats", "timestamp": 80001, "data": ["b", 150]},
        {"stream": "Stats", "timestamp": 80002, "data": ["a", 160]},
        {"stream": "Stats", "timestamp": 80003, "data": ["b", 155]},
    ],
    expect={
        "LastIp": [
            (1002, ["10.0.0.3"]),
        ],
        "Busy": [
            (4000, ["acme", 13]),
        ],
        "Gaps": [
            (80002, ["a", 60]),
            (80003, ["b", 5]),
        ],
    },
)

CASES["named_window"] = dict(
    doc=("`define window W (...) timeBatch(5 sec)` read by two grouped queries (sample 0121)"),
    plan="""@Plan:playback
define stream Sensor (kind string, v float, room int);
define window Recent (kind string, v float, room int) timeBatch(5 sec);
from Sensor insert into Recent;
from Recent select kind, max(v) as top, room group by kind, room insert into TopPerRoom;
from Recent select kind, avg(v) as mean group by kind insert into MeanPerKind;
""",
    events=[
        {"stream": "Sensor", "timestamp": 1000, "data": ["temp", 21.5, 1]},
        {"stream": "Sensor", "timestamp": 2000, "data": ["temp", 23.0, 2]},
        {"stream": "Sensor", "timestamp": 3000, "data": ["hum", 40.0, 1]},
        {"stream": "Sensor", "timestamp": 7000, "data": ["temp", 19.0, 1]},
        {"stream": "Sensor", "timestamp": 12500, "data": ["hum", 45.5, 2]},
        {"timestamp": 20000},
    ],
    expect={
        "TopPerRoom": [
            (1000, ["temp", 21.5, 1]),
            (2000, ["temp", 23.0, 2]),
            (3000, ["hum", 40.0, 1]),
            (7000, ["temp", 19.0, 1]),
            (12500, ["hum", 45.5, 2]),
        ],
        "MeanPerKind": [
            (2000, ["temp", 22.25]),
            (3000, ["hum", 40.0]),
            (7000, ["temp", 19.0]),
            (12500, ["hum", 45.5]),
        ],
    },
)

CASES["extensions"] = dict(
    doc="str:concat/length/charAt/contains, math:ceil, regex:find, map:create/createFromJSON/get with cast, #timeseries:regress (samples 0073, 0120, 0310 and the integration tests' extension flows)",
    plan="""@Plan:playback
define stream Dev (id int, name string, reading double, attrs string);
define stream XY (y int, x int);
from Dev
select str:concat(name, '#', id) as tag, str:length(name) as len, str:charAt(name, 0) as initial,
       str:contains(name, 'probe') as probe, math:ceil(reading) as up,
       regex:find('te?mp', name) as isTemp, map:create('hot', reading > 30.0) as flags
insert into Tagged;
from Dev select name, map:createFromJSON(attrs) as m insert into Parsed;
from Parsed select name, map:get(m, 'unit') as unit insert into Units;
from Units[not (unit is null)] select name, cast(unit, 'string') as unit insert into KnownUnits;
from XY#timeseries:regress(1, 100, 0.95, y, x) select beta0, beta1 insert into Fit;
""",
    events=[
        {
            "stream": "Dev",
            "timestamp": 1000,
            "data": [7, "temp-probe", 31.2, '{"unit": "C", "n": 1}'],
        },
        {"stream": "Dev", "timestamp": 1001, "data": [8, "humidity", 55.0, '{"n": 2}']},
        {"stream": "Dev", "timestamp": 1002, "data": [9, "tmp", -2.5, '{"unit": "F"}']},
        {"stream": "XY", "timestamp": 1003, "data": [3, 1]},
        {"stream": "XY", "timestamp": 1004, "data": [5, 2]},
        {"stream": "XY", "timestamp": 1005, "data": [8, 3]},
        {"stream": "XY", "timestamp": 1006, "data": [9, 4]},
    ],
    expect={
        "Tagged": [
            (1000, ["temp-probe#7", 10, "t", True, 32.0, True, "{hot=true}"]),
            (1001, ["humidity#8", 8, "h", False, 55.0, False, "{hot=true}"]),
            (1002, ["tmp#9", 3, "t", False, -2.0, True, "{hot=false}"]),
        ],
        "KnownUnits": [
            (1000, ["temp-probe", "C"]),
            (1002, ["tmp", "F"]),
        ],
        "Units": [
            (1000, ["temp-probe", "C"]),
            (1001, ["humidity", None]),
            (1002, ["tmp", "F"]),
        ],
        "Parsed": [
            (1000, ["temp-probe", "{unit=C, n=1}"]),
            (1001, ["humidity", "{n=2}"]),
            (1002, ["tmp", "{unit=F}"]),
        ],
        "Fit": [
            (1003, [0.0, 0.0]),
            (1004, [0.0, 0.0]),
            (1005, [0.0, 0.0]),
            (1006, [0.0, 2.1]),
        ],
    },
)

CASES["counting_windows"] = dict(
    doc=("#window.length count/sum over a float attribute (samples 0502, 0503)"),
    plan="""@Plan:playback
define stream Orders (no string, price float, qty int);
from Orders#window.length(3) select count(no) as orders, sum(price) as value, sum(qty) as items insert into Totals;
from Orders insert into Mirror;
""",
    events=[
        {"stream": "Orders", "timestamp": 1000, "data": ["o1", 9.5, 2]},
        {"stream": "Orders", "timestamp": 1001, "data": ["o2", 12.25, 1]},
        {"stream": "Orders", "timestamp": 1002, "data": ["o3", 3.0, 5]},
        {"stream": "Orders", "timestamp": 1003, "data": ["o4", 7.75, 1]},
    ],
    expect={
        "Totals": [
            (1000, [1, 9.5, 2]),
            (1001, [2, 21.75, 3]),
            (1002, [3, 24.75, 8]),
            (1003, [3, 23.0, 7]),
        ],
        "Mirror": [
            (1000, ["o1", 9.5, 2]),
            (1001, ["o2", 12.25, 1]),
            (1002, ["o3", 3.0, 5]),
            (1003, ["o4", 7.75, 1]),
        ],
    },
)

CASES["sequences"] = dict(
    doc=(
        "a value partition around a peak-detection sequence whose count state compares "
        "with its own previous row, b[last] (samples 0109, 0110)"
    ),
    plan="""@Plan:playback
define stream Ticks (sym string, px float, vol int);
partition with (sym of Ticks)
begin
  from every a=Ticks[px > 10], b=Ticks[((b[last].px is null) and px >= a.px) or ((not (b[last].px is null)) and px >= b[last].px)]+, c=Ticks[px < b[last].px]
  select a.sym as sym, a.px as start, b[last].px as peak, c.px as after
  insert into Peaks;
end;
""",
    events=[
        {"stream": "Ticks", "timestamp": 1000, "data": ["A", 12.0, 1]},
        {"stream": "Ticks", "timestamp": 1001, "data": ["B", 30.0, 1]},
        {"stream": "Ticks", "timestamp": 1002, "data": ["A", 11.5, 1]},
        {"stream": "Ticks", "timestamp": 1003, "data": ["A", 13.0, 1]},
        {"stream": "Ticks", "timestamp": 1004, "data": ["B", 31.0, 1]},
        {"stream": "Ticks", "timestamp": 1005, "data": ["A", 14.5, 1]},
        {"stream": "Ticks", "timestamp": 1006, "data": ["A", 14.5, 1]},
        {"stream": "Ticks", "timestamp": 1007, "data": ["B", 29.0, 1]},
        {"stream": "Ticks", "timestamp": 1008, "data": ["A", 9.0, 1]},
        {"stream": "Ticks", "timestamp": 1009, "data": ["A", 15.0, 1]},
        {"stream": "Ticks", "timestamp": 1010, "data": ["A", 16.0, 1]},
        {"stream": "Ticks", "timestamp": 1011, "data": ["A", 15.5, 1]},
    ],
    expect={
        "Peaks": [
            (1007, ["B", 30.0, 31.0, 29.0]),
            (1008, ["A", 11.5, 14.5, 9.0]),
            (1011, ["A", 15.0, 16.0, 15.5]),
        ],
    },
)


def _same(want, got):
    if not isinstance(got, (str, int, float, bool, type(None))):  # a map: by its Java form,
        return str(got) == want  # as the kit prints it
    if isinstance(want, float) or isinstance(got, float):  # float attributes are 32-bit
        return isinstance(got, (int, float)) and math.isclose(want, got, rel_tol=1e-6, abs_tol=1e-9)
    return want == got


def _run(case):
    plan = cep.compile(case["plan"])
    windows = {w.id for w in plan.windows}  # the kit listens to streams only
    got, bad = {}, []
    lines = [json.dumps(e) for e in case["events"]]
    assert run(
        plan,
        lines,
        lambda e: got.setdefault(e["stream"], []).append((e["timestamp"], e["data"])),
        bad.append,
    )
    assert bad == []
    return {s: rows for s, rows in got.items() if s not in windows}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cep40_construct_matches_siddhi(name):
    case = CASES[name]
    got, want = _run(case), case["expect"]
    assert sorted(got) == sorted(want), f"{name}: output streams differ"
    for stream, rows in want.items():
        assert len(got[stream]) == len(rows), f"{name}/{stream}: {got[stream]} != {rows}"
        for (wts, wdata), (gts, gdata) in zip(rows, got[stream]):
            assert (
                wts == gts
                and len(wdata) == len(gdata)
                and all(_same(w, g) for w, g in zip(wdata, gdata))
            ), f"{name}/{stream}: {(gts, gdata)} != {(wts, wdata)}"


def test_the_comparison_is_not_vacuous():
    """A changed expectation fails: the check compares values, not only counts."""
    case = dict(CASES["counting_windows"])
    case["expect"] = {k: [(ts, list(d)) for ts, d in v] for k, v in case["expect"].items()}
    case["expect"]["Totals"][0][1][1] = 9.75
    with pytest.raises(AssertionError):
        CASES["_perturbed"] = case
        try:
            test_cep40_construct_matches_siddhi("_perturbed")
        finally:
            del CASES["_perturbed"]
