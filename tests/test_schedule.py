"""The scheduler of bin/test.sh's `--dist loadfile` run (tests/schedule.py), on simulated
workers that take and run tests as pytest-xdist's do."""

import pytest

from tests.schedule import (
    durations_from_log,
    durations_per_test,
    known_durations,
    make_scheduler,
    simulate,
)

pytest.importorskip("xdist")

LOG = """============================= slowest durations =============================
130.25s call     tests/topology/test_restart_rate.py::test_kills[a-b]
2.50s setup    tests/topology/test_restart_rate.py::test_kills[a-b]
0.50s teardown tests/topology/test_restart_rate.py::test_kills[a-b]
1.00s call     tests/cep/test_x.py::test_one
=========================== short test summary info ============================
"""


def test_the_log_gives_seconds_per_file_and_per_test():
    assert durations_from_log(LOG) == {
        "tests/topology/test_restart_rate.py": 133.25,
        "tests/cep/test_x.py": 1.0,
    }
    assert durations_per_test(LOG) == {
        "tests/topology/test_restart_rate.py::test_kills[a-b]": 133.25,
        "tests/cep/test_x.py::test_one": 1.0,
    }


def test_the_checked_in_list_names_files_that_exist():
    from pathlib import Path

    listed = known_durations()
    assert listed, "tests/file_durations.txt is empty"
    root = Path(__file__).parent.parent
    assert [name for name in listed if not (root / name).exists()] == []


def _suite():
    """Four end-to-end files of one test each and thirty quick files of three tests."""
    tests = {
        "tests/e2e_a.py::t": 100.0,
        "tests/e2e_b.py::t": 60.0,
        "tests/e2e_c.py::t": 50.0,
        "tests/e2e_d.py::t": 40.0,
    }
    for i in range(30):
        tests.update({f"tests/quick_{i}.py::t{j}": 1.0 for j in range(3)})
    return tests


def test_the_longest_files_start_first_and_the_end_is_within_one_quick_file_of_the_bound():
    tests = _suite()
    files = {}
    for test, seconds in tests.items():
        files[test.split("::")[0]] = files.get(test.split("::")[0], 0.0) + seconds
    end, started = simulate(tests, 3, lambda config, log: make_scheduler(config, log, files))
    assert {order[0] for order in started.values()} == {
        "tests/e2e_a.py",
        "tests/e2e_b.py",
        "tests/e2e_c.py",
    }
    assert sorted(sum(started.values(), [])) == sorted(files)  # every file ran once
    bound = max(max(files.values()), sum(files.values()) / 3)  # no schedule ends sooner
    assert bound <= end <= bound + 3.0


def test_xdists_own_order_starts_the_long_files_last_and_ends_later():
    tests = _suite()
    files = {test.split("::")[0] for test in tests}
    end_xdist, started = simulate(tests, 3)
    end_ours, _ = simulate(
        tests,
        3,
        lambda config, log: make_scheduler(
            config, log, {name: 100.0 if "e2e" in name else 3.0 for name in files}
        ),
    )
    assert all(order[0].startswith("tests/quick_") for order in started.values())
    assert end_xdist > end_ours
