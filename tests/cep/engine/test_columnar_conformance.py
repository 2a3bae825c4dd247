"""Every conformance case (tests/conformance/cases: single, multi, fuzz, ext) run twice in process,
its inputs as row batches (`send_batch`) and as columnar batches (`send_columns` of Python
lists): every stream's output is the same (repr: NaN and -0.0 exactly). The row path itself
matches Siddhi 3.2's expected output (tests/conformance)."""

import functools
import os

import pytest
import yaml

import cep
from cep.errors import CepError

CASES = os.path.join(os.path.dirname(__file__), "..", "..", "conformance", "cases")
FILES = sorted(
    os.path.join(kind, f)
    for kind in (
        "single",
        "multi",
        "fuzz",
        "ext/string",
        "ext/math",
        "ext/regex",
        "ext/time",
        "ext/map",
        "ext/differential",
    )
    for f in os.listdir(os.path.join(CASES, kind))
    if f.endswith(".yaml")
)


def _batches(inputs):
    """Consecutive events of one stream as one batch; a clock line ends a batch."""
    out, cur = [], None
    for line in inputs or []:
        if "stream" not in line:
            out.append(("clock", line["timestamp"]))
            cur = None
        elif cur is not None and cur[0] == line["stream"]:
            cur[1].append((line.get("timestamp"), line["data"]))
        else:
            cur = (line["stream"], [(line.get("timestamp"), line["data"])])
            out.append(cur)
    return out


def _run(case, columnar):
    rt = cep.ExecutionPlanRuntime(cep.compile(case["plan"]), playback=True)
    got = {}
    for sid in rt.junctions:
        rt.add_callback(sid, lambda evs, sid=sid: got.setdefault(sid, []).extend(evs))
    rejected = []
    for stream, batch in _batches(case.get("input")):
        if stream == "clock":
            rt.advance_time(batch)
            continue
        h = rt.input_handler(stream)
        if not columnar:
            rejected.append([i for i, _ in h.send_batch([(t, tuple(d)) for t, d in batch])])
            continue
        names = [a.name for a in rt.junctions[stream].definition.attributes]
        if any(len(d) != len(names) for _, d in batch):
            rejected.append(None)
            continue
        cols = {n: [d[i] for _, d in batch] for i, n in enumerate(names)}
        ts = [t for t, _ in batch]
        rejected.append([i for i, _ in h.send_columns(cols, None if None in ts else ts)])
    rt.shutdown()
    return {k: repr(v) for k, v in got.items()}, rejected


@functools.lru_cache(maxsize=None)
def _both(name):
    """(rows result, columnar result) of a case, or (None, reason) when it is not compared."""
    with open(os.path.join(CASES, name)) as f:
        case = yaml.safe_load(f)
    if case.get("error"):
        return None, "a rejected plan"
    try:
        rows = _run(case, False)
    except CepError:
        return None, "the plan is rejected here"
    try:
        cols = _run(case, True)
    except CepError as exc:  # a column the columnar checks refuse as a whole
        return None, f"columnar input refused: {exc}"
    if cols[1] != rows[1]:
        return None, "the columnar checks reject other events (strict dtypes)"
    return rows[0], cols[0]


@pytest.mark.parametrize("name", FILES)
def test_case_columnar_equals_rows(name):
    rows, cols = _both(name)
    if rows is None:
        pytest.skip(cols)
    assert cols == rows


def test_most_cases_run_both_ways():
    """The skips above are few: the comparison covers the corpus (of plans that run: the
    extension suites hold many cases of rejected plans)."""
    runnable = [name for name in FILES if _both(name)[1] != "a rejected plan"]
    ran = sum(_both(name)[0] is not None for name in runnable)
    assert len(runnable) >= 400 and ran >= 0.8 * len(runnable), (ran, len(runnable))
