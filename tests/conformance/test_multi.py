"""Every multi-stream conformance case (joins, tables, patterns, sequences, partitions, triggers,
rejected plans; expected output from Siddhi 3.2) through `cep run`'s code path, in-process."""

import pytest

from tests.conformance.conformance import case_files, check_case, load_case, run_in_process

MULTI = case_files("multi")


def test_the_corpus_is_there():
    assert len(MULTI) >= 80


@pytest.mark.parametrize("name", MULTI)
def test_multi_case(name, tmp_path):
    case = load_case("multi", name)
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    assert problem is None, f"{name}: {problem}"


def test_checker_catches_a_wrong_pattern_output(tmp_path):
    """The comparison is not vacuous: a perturbed expectation of a pattern case fails."""
    case = load_case("multi", "044-pattern-condition-on-earlier-state.yaml")
    code, out, err = run_in_process(case, tmp_path)
    assert check_case(case, code, out, err) is None
    case["expect"]["Out"][1]["data"] = [1, 4, "IBM"]
    assert check_case(case, code, out, err) is not None
