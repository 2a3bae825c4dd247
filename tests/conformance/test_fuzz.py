"""Cases that differential testing against Siddhi 3.2.15 found (random plans and streams; expected
output from the real engine), through `cep run`'s code path, in-process. Each names one rule of
Siddhi's semantics (see its `description`)."""

import pytest

from tests.conformance.conformance import case_files, check_case, load_case, run_in_process

FUZZ = case_files("fuzz")


def test_the_corpus_is_there():
    assert len(FUZZ) >= 24


@pytest.mark.parametrize("name", FUZZ)
def test_fuzz_case(name, tmp_path):
    case = load_case("fuzz", name)
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    assert problem is None, f"{name}: {problem}"
