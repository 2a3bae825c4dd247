"""Named windows (`define window`): cases recorded from the real Siddhi 3.2.15 (see
record_case.py), through `cep run`'s code path, in-process."""

import pytest

from tests.conformance.conformance import case_files, check_case, load_case, run_in_process

WINDOW = case_files("window")


def test_the_corpus_is_there():
    assert len(WINDOW) >= 20


@pytest.mark.parametrize("name", WINDOW)
def test_window_case(name, tmp_path):
    case = load_case("window", name)
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    assert problem is None, f"{name}: {problem}"
