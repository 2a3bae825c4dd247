"""Every single-stream conformance case (expected output from Siddhi 3.2) through `cep run`'s
code path, in-process."""

import pytest

from tests.conformance.conformance import case_files, check_case, load_case, run_in_process

SINGLE = case_files("single")


def test_the_corpus_is_there():
    assert len(SINGLE) >= 80


@pytest.mark.parametrize("name", SINGLE)
def test_single_case(name, tmp_path):
    case = load_case("single", name)
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    assert problem is None, f"{name}: {problem}"


def test_checker_catches_a_wrong_output(tmp_path):
    """The comparison is not vacuous: a perturbed expectation fails."""
    case = load_case("single", "034-win-length-sliding-sum.yaml")
    code, out, err = run_in_process(case, tmp_path)
    case["expect"]["Out"][2]["data"] = [8]
    assert check_case(case, code, out, err) is not None
