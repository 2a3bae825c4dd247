"""Every conformance case's query that gets a keyed kernel runs over the case's input events
grouped by key: the kernel's rows equal the engine's fed key by key (the engine itself
matches Siddhi 3.2 on these cases). A query outside a partition is one instance over all
events: the kernel gets it as a partition with a single key (`keys` naming every stream)."""

import collections
import os

import numpy as np
import pytest
import yaml

import cep
from cep.engine.columnar.columns import DTYPES
from cep.engine.columnar.keyed import keyed_kernel
from cep.errors import CepError
from cep.model import Partition, ValuePartitionKey, Variable
from tests.cep.engine.columnar.keyed_reference import engine_rows, exact, kernel_rows

CASES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "conformance", "cases")
FILES = sorted(
    os.path.join(kind, f)
    for kind in ("single", "multi", "fuzz")
    for f in os.listdir(os.path.join(CASES, kind))
    if f.endswith(".yaml")
)


def _queries(plan):
    """(query, keys, partitioned) of every query: a partition's with its value keys, others
    as if keyed (their events then go as one key)."""
    for el in plan.elements:
        if isinstance(el, Partition):
            if all(
                isinstance(k, ValuePartitionKey) and isinstance(k.expression, Variable)
                for k in el.keys
            ):
                keys = {k.stream_id: k.expression.name for k in el.keys}
                yield from ((q, keys, True) for q in el.queries)
        else:
            yield el, {s.id: s.attributes[0].name for s in plan.streams if s.attributes}, False


def _events(case, definition, key_attr):
    """(ts, starts, cols) of the case's events of one stream grouped by key, or None."""
    names = [a.name for a in definition.attributes]
    evs = [
        (line.get("timestamp"), line["data"])
        for line in case.get("input") or []
        if line.get("stream") == definition.id
    ]
    if not evs or any(t is None or len(d) != len(names) or None in d for t, d in evs):
        return None
    ki = names.index(key_attr) if key_attr else None
    groups = {}
    for t, d in evs:
        groups.setdefault(d[ki] if ki is not None else 0, []).append((t, d))
    ordered = [e for g in groups.values() for e in g]
    sizes = [len(g) for g in groups.values()]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    cols = {
        n: np.array([d[i] for _, d in ordered], DTYPES[a.type])
        for i, (n, a) in enumerate(zip(names, definition.attributes))
    }
    return np.array([t for t, _ in ordered], np.int64), starts, cols


def _kernel_cases():
    out = []
    for name in FILES:
        with open(os.path.join(CASES, name)) as f:
            case = yaml.safe_load(f)
        try:
            plan = cep.compile(case["plan"])
        except CepError:
            continue
        defs = {s.id: s for s in plan.streams}
        for i, (q, keys, _) in enumerate(_queries(plan)):
            kernel = keyed_kernel(q, defs, keys)
            if kernel is not None:
                out.append(pytest.param(name, i, id=f"{name}#{i}"))
                KINDS[type(kernel).__name__] += 1
    return out


KINDS = collections.Counter()
KERNEL_CASES = _kernel_cases()


def test_kernels_apply_to_many_cases():
    """39 on 2026-11-25: 29 stateless, 8 sliding aggregates, 2 patterns."""
    assert (
        KINDS["StatelessKernel"] >= 25
        and KINDS["SlidingKernel"] >= 6
        and KINDS["PatternKernel"] >= 2
    )


@pytest.mark.parametrize("name,index", KERNEL_CASES)
def test_kernel_equals_engine_on_conformance_case(name, index):
    with open(os.path.join(CASES, name)) as f:
        case = yaml.safe_load(f)
    plan = cep.compile(case["plan"])
    defs = {s.id: s for s in plan.streams}
    query, keys, partitioned = list(_queries(plan))[index]
    kernel = keyed_kernel(query, defs, keys)
    data = _events(
        case, defs[kernel.input_stream], keys.get(kernel.input_stream) if partitioned else None
    )
    if data is None:
        pytest.skip("no events, nulls or clock-stamped events of the stream")
    single = cep.compile(case["plan"])  # the reference: this query alone, key by key
    single = _alone(single, index)
    want = engine_rows(single, kernel.input_stream, kernel.output_stream, *data)
    assert exact(kernel_rows(kernel, *data)) == exact(want)


def _alone(plan, index):
    """The plan keeping only the index-th query (in its partition, if it has one)."""
    import dataclasses

    n = 0
    for el in plan.elements:
        qs = el.queries if isinstance(el, Partition) else (el,)
        for q in qs:
            if n == index:
                keep = dataclasses.replace(el, queries=(q,)) if isinstance(el, Partition) else q
                return dataclasses.replace(plan, elements=(keep,))
            n += 1
    raise AssertionError(index)
