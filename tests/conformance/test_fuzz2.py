"""Cases from a second differential run against Siddhi 3.2.15 (random plans and streams;
expected output from the real engine), through `cep run`'s code path, in-process. Each names
one rule of Siddhi's semantics (see its `description`). Four are plain Siddhi 3.2 bugs kept by
default (tests/cep/engine/test_siddhi_mode_bugs.py checks them fixed under
`@Plan:siddhi('fixed')`)."""

import pytest

from tests.conformance.conformance import case_files, check_case, load_case, run_in_process

FUZZ2 = case_files("fuzz2")
# not yet matched by this engine: expected to fail (strict: a fix must remove its name here).
PENDING: set[str] = set()


def test_the_corpus_is_there():
    assert len(FUZZ2) == 16 and PENDING <= set(FUZZ2)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="not yet matched"))
        if n in PENDING
        else n
        for n in FUZZ2
    ],
)
def test_fuzz2_case(name, tmp_path):
    case = load_case("fuzz2", name)
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    assert problem is None, f"{name}: {problem}"
