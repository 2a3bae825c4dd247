"""benchmarks/cep_run_bench.py runs its four workloads through `cep run` and the engine's
send_batch (tiny, one run): a smoke test of the table, not a timing. The script itself stops
when `cep run` printed a different number of lines than the engine emitted."""

import importlib.util
import pathlib

SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "cep_run_bench.py"


def test_the_table_has_a_row_per_workload_with_the_ratio(capsys):
    spec = importlib.util.spec_from_file_location("cep_run_bench", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--events", "3000", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    rows = [x.split(" | ") for x in out.splitlines() if x.startswith("| ")][1:]
    assert [r[0][2:] for r in rows] == [
        "pass-through",
        "filter",
        "length(10) sum",
        "group by sum, 10 groups",
    ]
    assert [r[1] for r in rows][0] == "3,000" and all(float(r[-1][:-2]) > 0 for r in rows)
    assert out.startswith("# ") and out.splitlines()[-1].startswith("# load average after:")
