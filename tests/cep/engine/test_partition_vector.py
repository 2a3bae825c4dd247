"""The columnar form of the partitioned-pattern kernel (cep/engine/partition/vector.py):
columnar batches against the same events sent as rows through the row loop, on
hypothesis-drawn streams (keys appearing once and vanishing, partials carried across batches,
`within` ending at a batch boundary, ties, NaN and null values, time going back, batches up
to 1,000 events sent whole, rows and columns mixed, a snapshot restored part-way), the
search against brute force, and which queries get a columnar form."""

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import cep
from cep.engine.partition import vector as vector_mod
from cep.engine.partition.vector import first_matches
from tests.cep.engine.stock_events import HEAD, columns as _columns, feed, timed as _timed

np = pytest.importorskip("numpy")

SHAPES = [
    "every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price * 1.05] within 30 ms "
    "select e1.sym as sym, e1.price as p1, e2.price as p2",
    "every e1=S -> e2=S[sym == e1.sym and price >= e1.price] within 20 ms "
    "select e1.price as p1, e2.price as p2, e2.vol as v",
    "every e1=S[vol > 2] -> e2=S[e2.price < e1.price - 1.0] within 25 ms "
    "select e1.vol as v1, e2.vol * 2 as v2, e1.sym as s",
    "every e1=S -> e2=S[e2.price <= e1.price] select e1.price as p1, e2.price as p2",
]
PRICES = st.one_of(
    st.none(),
    st.sampled_from([math.nan, math.inf, -0.0, 0.0, 100.0, 105.0]),
    st.floats(90, 120, allow_nan=False),
)
KEYS = ["a", "b", "c"] + [f"once{i}" for i in range(6)] + [None]
ROW = st.tuples(st.sampled_from(KEYS), PRICES, st.one_of(st.none(), st.integers(1, 4)))
EVENT = st.tuples(st.sampled_from([0, 0, 1, 2, 7, 40, -10, -35]), ROW)
BATCH = st.one_of(
    st.lists(EVENT, min_size=1, max_size=30), st.lists(EVENT, min_size=520, max_size=800)
)
BATCHES = st.lists(
    st.tuples(BATCH, st.sampled_from(["cols", "cols", "rows"])), min_size=1, max_size=6
)


class _Count:
    """Counts the batches the columnar form runs (wraps VectorPattern.run)."""

    def __init__(self, monkeypatch):
        self.n = 0
        run = vector_mod.VectorPattern.run

        def counted(vp, k, cols):
            self.n += 1
            return run(vp, k, cols)

        monkeypatch.setattr(vector_mod.VectorPattern, "run", counted)


def _run(text, batches, restore_at=None, columnar_callback=False):
    got = []

    def fresh():
        rt = cep.ExecutionPlanRuntime(cep.compile(text))
        if columnar_callback:
            rt.add_callback("O", lambda c: got.extend(repr(e) for e in c.to_rows()), columnar=True)
        else:
            rt.add_callback("O", lambda evs: got.extend(repr(e) for e in evs))
        return rt

    rt = fresh()
    feed(rt, fresh, batches, restore_at)
    return got


@pytest.mark.parametrize("shape", SHAPES)
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.too_slow,
    ],
)
@given(batches=BATCHES, cut=st.integers(0, 6), col_cb=st.booleans())
def test_columnar_form_matches_the_row_loop(shape, batches, cut, col_cb, monkeypatch):
    text = HEAD + f"partition with (sym of S) begin from {shape} insert into O; end;"
    timed = _timed(batches)
    want = _run(text, [("rows", evs) for _, evs in timed])
    count = _Count(monkeypatch)
    got = _run(text, timed, restore_at=cut, columnar_callback=col_cb)
    assert got == want
    if any(
        mode == "cols" and all(a[0] <= b[0] for a, b in zip(evs, evs[1:])) for mode, evs in timed
    ):
        assert count.n > 0  # the columnar form ran (time going back takes the row loop)


def test_partials_carry_across_batches_and_within_ends_at_a_boundary(monkeypatch):
    """A partial of batch 1 completes in batch 3 (its key absent from batch 2) while within
    reach; one whose first higher price comes too late never completes, even though a later
    event is higher still; both in columns, compared with the rows."""
    text = HEAD + (
        "partition with (sym of S) begin from every e1=S -> e2=S[e2.sym == e1.sym "
        "and e2.price > e1.price] within 100 ms select e1.price as p1, "
        "e2.price as p2 insert into O; end;"
    )
    timed = [
        ("cols", [(1000, ("a", 1.0, 1)), (1001, ("b", 5.0, 1))]),
        ("cols", [(1050, ("c", 1.0, 1))]),
        ("cols", [(1100, ("a", 2.0, 1)), (1102, ("b", 6.0, 1)), (1103, ("b", 7.0, 1))]),
    ]
    count = _Count(monkeypatch)
    got = _run(text, timed)
    want = _run(text, [("rows", e) for _, e in timed])
    assert count.n == 3 and got == want
    # a@1000 -> a@1100 is within 100 ms; b@1001's first higher price (1102) is 101 ms later;
    # b@1102 -> b@1103 completes
    assert got == [repr((1100, (1.0, 2.0))), repr((1103, (6.0, 7.0)))]


def test_many_keys_that_appear_once_do_not_grow_the_key_table(monkeypatch):
    """Keys whose partials all completed or were dropped leave the code table."""
    text = HEAD + (
        "partition with (sym of S) begin from every e1=S -> e2=S[e2.sym == e1.sym "
        "and e2.price > e1.price] within 5 ms select e1.price as p1, "
        "e2.price as p2 insert into O; end;"
    )
    rt = cep.ExecutionPlanRuntime(cep.compile(text))
    h = rt.input_handler("S")
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    vp = part.fast.merged[0].vector
    for b in range(12):
        evs = [(1000 + b * 1000 + i, (f"k{b}-{i}", 1.0, 1)) for i in range(1000)]
        assert h.send_columns(*_columns(evs)) == []
    assert vp.pend is not None and len(vp.keys) <= 2 * len(vp.pend) + 4096 < 12000


@pytest.mark.parametrize("op", [">", ">=", "<", "<="])
@settings(max_examples=80, deadline=None)
@given(
    vals=st.lists(
        st.sampled_from([math.nan, 1.0, 2.0, 3.0, -math.inf, math.inf]), min_size=1, max_size=40
    ),
    queries=st.lists(
        st.tuples(
            st.integers(0, 40),
            st.integers(0, 40),
            st.sampled_from([math.nan, 0.5, 1.0, 2.0, 3.0, math.inf]),
        ),
        min_size=1,
        max_size=20,
    ),
)
def test_first_matches_is_the_first_satisfying_index(op, vals, queries):
    cmp = {
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
    }[op]
    n = len(vals)
    qs = [(min(lo, n), min(max(lo, hi), n), t) for lo, hi, t in queries]
    want = [next((x for x in range(lo, hi) if cmp(vals[x], t)), hi) for lo, hi, t in qs]
    lo, hi, thr = (np.array(c) for c in zip(*qs))
    got = first_matches(
        np.array(vals), lo.astype(np.int64), hi.astype(np.int64), thr.astype(np.float64), op
    )
    assert got.tolist() == want


@pytest.mark.parametrize(
    "shape,has",
    [
        (
            "every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price] within 1 sec "
            "select e1.sym as s, e2.price as p",
            True,
        ),
        ("every e1=S -> e2=S[e2.vol > e1.vol] select e1.vol as a, e2.vol as b", False),  # long
        ("every e1=S -> e2=S[e2.price > e1.price] select e2.price - e1.price as d", False),
        ("every e1=S -> e2=S[e2.price > e1.price and e2.vol != e1.vol] select e1.vol as v", False),
        ("every e1=S -> e2=S[e2.sym == e1.sym] select e1.vol as v", False),  # no range
    ],
)
def test_which_queries_get_a_columnar_form(shape, has):
    rt = cep.ExecutionPlanRuntime(
        cep.compile(HEAD + f"partition with (sym of S) begin from {shape} insert into O; end;")
    )
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    assert (part.fast.merged[0].vector is not None) == has


def test_a_columnar_batch_goes_whole_through_a_columnar_partition():
    """With every query columnar, a 1,000-event batch reaches the partition (and the
    output callback) in one piece; otherwise in send_batch's 500-event steps."""
    calls = {}
    for name, cond in (
        ("whole", "e2.price > e1.price"),
        ("steps", "e2.price > e1.price and e2.vol != e1.vol"),
    ):
        rt = cep.ExecutionPlanRuntime(
            cep.compile(
                HEAD + f"partition with (sym of S) begin from every e1=S -> e2=S[{cond}] "
                "select e1.price as a, e2.price as b insert into O; end;"
            )
        )
        calls[name] = []
        rt.add_callback("O", lambda c, n=name: calls[n].append(len(c)), columnar=True)
        evs = [(1000 + i, ("a", float(i % 7), i % 3)) for i in range(1000)]
        assert rt.input_handler("S").send_columns(*_columns(evs)) == []
    assert len(calls["whole"]) == 1 and len(calls["steps"]) == 2


@pytest.mark.parametrize(
    "key_type,key_of",
    [
        ("string", lambda i: f"k{i % 5}"),
        ("int", lambda i: i % 5),
        ("long", lambda i: (i % 5) - 2**40),
        ("bool", lambda i: i % 2 == 0),
    ],
)
@pytest.mark.parametrize("value_type", ["double", "float"])
def test_key_and_value_types_and_unicode_columns(key_type, key_of, value_type, monkeypatch):
    """Keys of every hashable type (strings also as a numpy unicode array), float and
    double values: the columnar form gives the row loop's output."""
    text = (
        f"@Plan:playback\ndefine stream T (k {key_type}, x {value_type});\n"
        "partition with (k of T) begin from every e1=T -> e2=T[e2.x >= e1.x * 1.5] "
        "within 40 ms select e1.k as k, e1.x as a, e2.x as b insert into O; end;"
    )
    evs = [(1000 + i, (key_of(i), float((i * 7919) % 13) / 4)) for i in range(700)]
    count = _Count(monkeypatch)
    got, want = [], []
    for out, mode in ((got, "cols"), (want, "rows")):
        rt = cep.ExecutionPlanRuntime(cep.compile(text))
        rt.add_callback("O", lambda e, out=out: out.extend(repr(x) for x in e))
        h = rt.input_handler("T")
        if mode == "rows":
            assert h.send_batch(evs) == []
            continue
        keys = [r[0] for _, r in evs]
        if key_type == "string":
            kcol = np.array(keys)  # numpy unicode
        else:
            kcol = np.array(keys, {"int": np.int32, "long": np.int64, "bool": bool}[key_type])
        xcol = np.array(
            [r[1] for _, r in evs], np.float64 if value_type == "double" else np.float32
        )
        assert h.send_columns({"k": kcol, "x": xcol}, np.array([t for t, _ in evs])) == []
    assert count.n == 1 and got == want and len(got) > 100


@pytest.mark.parametrize(
    "second,columnar",
    [
        (
            "from every e1=S -> e2=S[e2.price < e1.price] within 20 ms select e1.sym as s, "
            "e2.price as p insert into O2;",
            True,
        ),
        (
            "from every e1=S -> e2=S[e2.price < e1.price and e2.vol != e1.vol] select e1.sym as s, "
            "e2.price as p insert into O2;",
            False,
        ),
    ],
)
def test_two_queries_in_a_partition(second, columnar, monkeypatch):
    """Both queries' outputs equal the rows'; the columnar form runs only when every query
    of the partition has one."""
    text = HEAD + (
        "partition with (sym of S) begin from every e1=S -> e2=S[e2.price > "
        f"e1.price] within 30 ms select e1.sym as s, e2.price as p insert into O; "
        f"{second} end;"
    )
    evs = [(1000 + i, (f"k{i % 3}", float((i * 31) % 11), i % 4)) for i in range(800)]
    count = _Count(monkeypatch)
    outs = {}
    for mode in ("cols", "rows"):
        rt = cep.ExecutionPlanRuntime(cep.compile(text))
        seen = outs[mode] = []
        for name in ("O", "O2"):
            rt.add_callback(name, lambda e, n=name, seen=seen: seen.extend((n, repr(x)) for x in e))
        h = rt.input_handler("S")
        assert (h.send_columns(*_columns(evs)) if mode == "cols" else h.send_batch(evs)) == []
    assert sorted(outs["cols"]) == sorted(outs["rows"]) and len(outs["rows"]) > 100
    for name in ("O", "O2"):
        assert [x for x in outs["cols"] if x[0] == name] == [
            x for x in outs["rows"] if x[0] == name
        ]
    assert (count.n > 0) == columnar
