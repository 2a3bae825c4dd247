"""benchmarks/siddhi_compare.py's columnar path (send_columns, columnar callbacks) gives the
same number of outputs as the row path on each of the 8 workloads (tiny scale, a smoke test,
not a timing)."""

import importlib.util
import pathlib

SCRIPT = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "siddhi_compare.py"


def test_the_eight_workloads_run_through_columns_as_through_rows():
    spec = importlib.util.spec_from_file_location("siddhi_compare_columnar", SCRIPT)
    sc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sc)
    for w in sc.workloads(0.01):
        _, _, rows = sc.run_once(w, False)
        _, _, cols = sc.run_columnar(w)
        assert cols == rows and rows > 0, w.name
