"""Counting states (`<n:m>`) with `within`, from a differential run against Siddhi 3.2.15
(random events with repeated timestamps and gaps; expected output from the real engine),
through `cep run`'s code path, in-process. Each case's `description` names the rule."""

import pytest

from tests.conformance.conformance import case_files, check_case, load_case, run_in_process

COUNTS = case_files("counts")


def test_the_corpus_is_there():
    assert len(COUNTS) == 5


@pytest.mark.parametrize("name", COUNTS)
def test_counts_case(name, tmp_path):
    case = load_case("counts", name)
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    assert problem is None, f"{name}: {problem}"
