"""benchmarks/siddhi_compare.py runs its 8 workloads (tiny scale, one run) and the checked and
pre-validated paths give the same number of outputs on each (a smoke test, not a timing)."""
import importlib.util
import pathlib

SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "siddhi_compare.py"


def load():
    spec = importlib.util.spec_from_file_location("siddhi_compare", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_eight_workloads_run_checked_and_prevalidated_alike():
    sc = load()
    works = sc.workloads(0.01)
    assert len(works) == 8
    for w in works:
        _, _, checked = sc.run_once(w, False)
        _, _, pre = sc.run_once(w, True)
        assert checked == pre and checked > 0, w.name


def test_the_table_prints_a_row_per_workload(capsys):
    sc = load()
    assert sc.main(["--runs", "1", "--scale", "0.005", "--only", "filter,length(10) ",
                    "--no-freeze"]) == 0
    out = capsys.readouterr().out
    rows = [x for x in out.splitlines() if x.startswith("| ")]
    assert [r.split(" | ")[0][2:] for r in rows[1:]] == ["filter + projection",
                                                         "length(10) sum"]
    assert out.startswith("# ") and "load average" in out.splitlines()[0]
    assert out.splitlines()[-1].startswith("# load average after:")
