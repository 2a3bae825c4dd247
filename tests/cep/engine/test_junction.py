"""Input handlers (cep/engine/junction.py): a big batch goes through in steps of STEP events;
indexes of bad events, outputs and default timestamps are those of one whole batch."""

import cep
from cep.engine import junction

PLAN = (
    "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"
    "from S#window.length(7) select sym, sum(price) as s, count() as c "
    "insert into Out;"
)


def _events(n):
    return [(1000 + i, (f"K{i % 5}", float(i % 13), i)) for i in range(n)]


def _run(events, step):
    old, junction.STEP = junction.STEP, step
    try:
        rt = cep.ExecutionPlanRuntime(cep.compile(PLAN))
        got = []
        rt.add_callback("Out", got.extend)
        bad = rt.input_handler("S").send_batch(events)
        return got, [(i, str(e)) for i, e in bad]
    finally:
        junction.STEP = old


def test_steps_give_the_output_and_bad_indexes_of_one_whole_batch():
    events = _events(1234)
    for i in (3, 499, 500, 501, 1100, 1233):
        events[i] = (events[i][0], ("X", "not a number", 1))
    events[777] = ("late", events[777][1])
    whole = _run(events, 10_000)
    for step in (500, 77, 1):
        assert _run(events, step) == whole
    assert [i for i, _ in whole[1]] == [3, 499, 500, 501, 777, 1100, 1233]
    assert len(whole[0]) == 1234 - 7


def test_events_without_timestamps_share_the_batch_default_time(monkeypatch):
    rt = cep.ExecutionPlanRuntime(cep.compile(PLAN.replace("@Plan:playback\n", "")))
    got = []
    rt.add_callback("Out", got.extend)
    ticks = iter(range(10**6, 2 * 10**6))  # a clock that moves at every reading
    monkeypatch.setattr(rt.scheduler, "now", lambda: next(ticks))
    assert rt.input_handler("S").send_batch([(None, r) for _, r in _events(1200)]) == []
    assert len(got) == 1200 and len({ts for ts, _ in got}) == 1


def test_a_generator_of_events_is_accepted():
    rt = cep.ExecutionPlanRuntime(cep.compile(PLAN))
    got = []
    rt.add_callback("Out", got.extend)
    assert rt.input_handler("S").send_batch(e for e in _events(900)) == []
    assert len(got) == 900
