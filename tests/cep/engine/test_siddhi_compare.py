"""benchmarks/siddhi_compare.py runs its 9 workloads (tiny scale, one run) and the checked and
pre-validated paths give the same number of outputs on each (a smoke test, not a timing); its
output comparison with Siddhi tells equal from different outputs; with the Siddhi kit at hand,
a live run compares outputs and times both send modes."""

import importlib.util
import pathlib

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "siddhi_compare.py"


def load():
    spec = importlib.util.spec_from_file_location("siddhi_compare", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_nine_workloads_run_checked_and_prevalidated_alike():
    sc = load()
    works = sc.workloads(0.01)
    assert len(works) == 9
    for w in works:
        _, _, checked = sc.run_once(w, False)
        _, _, pre = sc.run_once(w, True)
        assert checked == pre and checked > 0, w.name


def test_the_table_prints_a_row_per_workload(capsys):
    sc = load()
    assert (
        sc.main(
            [
                "--runs",
                "1",
                "--scale",
                "0.005",
                "--only",
                "filter +,length(10) ",
                "--no-freeze",
                "--no-siddhi",
                "--no-cep-run",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    rows = [x for x in out.splitlines() if x.startswith("| ")]
    assert [r.split(" | ")[0][2:] for r in rows[1:]] == ["filter + projection", "length(10) sum"]
    assert out.startswith("# ") and "load average" in out.splitlines()[0]
    assert out.splitlines()[-1].startswith("# load average after:")


def test_output_comparison_tells_equal_from_different():
    sc = load()
    ours = {"Out": [(1000, ("IBM", 1.5)), (1001, ("WSO2", 2.0))]}
    theirs = {"Out": [[1000, ["IBM", 1.5]], [1001, ["WSO2", 2.0]]]}
    theirs = {k: [tuple(e) for e in v] for k, v in theirs.items()}
    assert sc.same_outputs(ours, theirs, keyed=False) is None
    swapped = {"Out": theirs["Out"][::-1]}
    assert "Out[0]" in sc.same_outputs(ours, swapped, keyed=False)
    assert sc.same_outputs(ours, swapped, keyed=True) is None  # multisets per stream
    off = {"Out": [(1000, ["IBM", 1.5]), (1001, ["WSO2", 2.0000000001])]}
    assert "Out[1]" in sc.same_outputs(ours, off, keyed=True)
    assert "events" in sc.same_outputs(ours, {"Out": theirs["Out"][:1]}, keyed=False)


def test_the_mode_compared_with_is_batch_unless_the_batch_api_changes_the_output():
    sc = load()
    w = sc.workloads(0.001)[0]
    live = {
        "diff": None,
        "batch": {"outputs": 5, "median_events_per_cpu_s": 9.0},
        "one": {"outputs": 5, "median_events_per_cpu_s": 4.0},
    }
    assert sc.reference(w, live) == (9.0, "batch", True)
    live["batch"]["outputs"] = 6
    assert sc.reference(w, live) == (4.0, "one-event", True)
    live["diff"] = "Out[0]: ..."
    assert sc.reference(w, live)[2] is False
    assert sc.reference(w, None) == (w.ref, "ref, batch", True)


@pytest.mark.slow
def test_live_siddhi_gives_the_same_outputs_and_both_modes(capsys):
    sc = load()
    if sc.find_kit() is None:
        pytest.skip(
            "the Siddhi kit (../shared/siddhi-kit) or java is not here; the suite does not need it"
        )
    assert (
        sc.main(
            [
                "--runs",
                "1",
                "--scale",
                "0.005",
                "--only",
                "length(10) ",
                "--no-freeze",
                "--no-validated",
                "--siddhi-warmup",
                "0",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    (row,) = [x for x in out.splitlines() if x.startswith("| length(10) sum")]
    cells = row.split(" | ")
    assert cells[3] == "yes" and cells[6].endswith("(batch)"), row
    assert "live, kit" in out.splitlines()[0]
