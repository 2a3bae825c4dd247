"""Equality with `cep run --playback`: conformance cases with partitions, joins, windows and
patterns, their inputs converted to one Parquet file per stream, run as a real Spark job
(local[2]); the reference is `cep run` over the same events merged in timestamp order (ties:
--input order, then row order). Keyed plans may order events of different keys differently,
so their outputs are compared as sorted lists; single-task outputs in emission order."""

import io
import json
import argparse

import pytest

import cep
from cep.backtest.inputs import InputSpec
from cep.backtest.job import run_backtest
from tests.backtest.conftest import read_output, write_parquet
from tests.conformance.conformance import load_case

CASES = [
    ("multi", "085-part-length-window-sum.yaml"),
    ("multi", "087-part-two-streams-diff-attrs.yaml"),
    ("multi", "091-part-inner-stream.yaml"),
    ("multi", "094-part-unpartitioned-stream-inside.yaml"),
    ("multi", "095-part-sequence-per-key.yaml"),
    ("multi", "096-part-group-by-inside.yaml"),
    ("multi", "097-part-int-key-lengthbatch.yaml"),
    ("multi", "098-part-multi-query-outputs.yaml"),
    ("multi", "099-part-count-pattern-login.yaml"),
    ("multi", "002-join-time-windows.yaml"),
    ("multi", "007-join-full-outer.yaml"),
    ("multi", "014-join-group-by-sum.yaml"),
    ("multi", "042-pattern-every-within.yaml"),
    ("multi", "065-pattern-same-timestamp.yaml"),
    ("multi", "073-seq-plus.yaml"),
    ("single", "047-win-time-boundary-exact.yaml"),
    ("single", "057-win-externalTimeBatch.yaml"),
    ("single", "089-agg-groupby-lengthBatch-expired.yaml"),
]


def merged(case, order):
    """The case's events merged in the backtest's order: timestamp, --input index, row."""
    events = [(e["timestamp"], order.index(e["stream"]), i, e) for i, e in enumerate(case["input"])]
    return [e for *_, e in sorted(events, key=lambda x: x[:3])]


def reference(case, events, tmp_path):
    """Output of `cep run --playback` (its own code path) per stream: [(ts, data tuple)]."""
    from cep.cli.run import main

    plan_file, events_file = tmp_path / "plan.siddhiql", tmp_path / "merged.jsonl"
    plan_file.write_text(case["plan"])
    events_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    out, err = io.StringIO(), io.StringIO()
    code = main(
        argparse.Namespace(
            plan=str(plan_file), events=str(events_file), playback=True, on_error="fail"
        ),
        stdout=out,
        stderr=err,
    )
    assert code == 0, err.getvalue()
    got = {}
    for line in out.getvalue().splitlines():
        e = json.loads(line)
        got.setdefault(e["stream"], []).append((e["timestamp"], tuple(e["data"])))
    return got


def to_parquet(case, plan, order, tmp_path):
    defs = {s.id: s for s in plan.streams}
    specs = []
    for sid in order:
        rows = [(e["timestamp"], tuple(e["data"])) for e in case["input"] if e["stream"] == sid]
        path = write_parquet(tmp_path / f"{sid}.parquet", defs[sid], rows)
        specs.append(InputSpec(sid, path, "parquet"))
    return specs


@pytest.mark.slow
@pytest.mark.parametrize("kind,name", CASES, ids=[n for _, n in CASES])
def test_backtest_equals_cep_run(spark, tmp_path, kind, name):
    case = load_case(kind, name)
    plan = cep.compile(case["plan"])
    order = list(dict.fromkeys(e["stream"] for e in case["input"]))
    want = reference(case, merged(case, order), tmp_path)
    summary = run_backtest(
        case["plan"], to_parquet(case, plan, order, tmp_path), str(tmp_path / "out"), spark=spark
    )
    assert summary.events_in == len(case["input"])
    keyed = summary.mode == "keyed"
    for stream, count in summary.events_out.items():
        have = read_output(str(tmp_path / "out"), stream)
        expected = want.get(stream, [])
        assert count == len(expected), stream
        if keyed:
            have, expected = sorted(have, key=repr), sorted(expected, key=repr)
        assert have == expected, f"{stream} ({summary.mode})"
    assert set(want) <= set(summary.events_out)
