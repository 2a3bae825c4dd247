"""The range partition's router (one generated loop) gives each label the events its
conditions meet, in event order, labels in first-appearance order: the same as checking each
condition of each event in turn (the reference below), for overlapping ranges, a label used
twice, nulls and events meeting no range."""

import random

import cep
from cep.engine.expressions import SingleStreamScope, compile_expression, make_function
from cep.engine.partition.keys import compile_router_key

PLAN = """define stream S (price double, vol int);
partition with (price < 3.0 as 'low' or price >= 2.0 and price < 6.0 as 'mid'
                or vol > 3 as 'low' or price >= 8.0 as 'high' of S)
begin from S select price insert into Out; end;"""


def _reference(key, definition):
    scope = SingleStreamScope(definition)
    conds = [
        (rc.label, make_function("cond", f"def cond(r):\n    return {c.source}\n", c.globals))
        for rc in key.ranges
        for c in [compile_expression(rc.condition, scope)]
    ]

    def route(batch):
        groups = {}
        for ev in batch:
            for label, cond in conds:
                if cond(ev[1]):
                    groups.setdefault(label, []).append(ev)
        return list(groups.items())

    return route


def test_the_generated_router_routes_as_the_conditions_in_turn():
    plan = cep.compile(PLAN)
    key = plan.partitions[0].keys[0]
    definition = plan.streams[0]
    route, reference = compile_router_key(key, definition), _reference(key, definition)
    rnd = random.Random(3)
    for trial in range(50):
        batch = [
            (i, (None if rnd.random() < 0.1 else float(rnd.randrange(10)), rnd.randrange(6)))
            for i in range(rnd.randrange(0, 40))
        ]
        assert list(route(batch)) == reference(batch)
    both = [(1, (1.0, 5))]  # 'low' twice: in its group twice
    assert list(route(both)) == [("low", [both[0], both[0]])]
