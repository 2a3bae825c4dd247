"""Every case of Siddhi 3.2.15's standard-extension test suites (str, math, regex, time, map;
expected output from the real Siddhi) through `cep run`'s code path, in-process. A case that
cannot pass is listed in KNOWN_FAILURES with its reason, and must then still fail (so the list
stays true)."""

import pytest

from tests.conformance.conformance import case_files, check_case, load_case, run_in_process

NAMESPACES = ("string", "math", "regex", "time", "map", "differential")
CASES = [(ns, name) for ns in NAMESPACES for name in case_files(f"ext/{ns}")]

# case file -> why it cannot pass
KNOWN_FAILURES: dict[str, str] = {}


def test_the_corpus_is_there():
    assert len(CASES) >= 440


@pytest.mark.parametrize("ns,name", CASES, ids=[n for _, n in CASES])
def test_ext_case(ns, name, tmp_path):
    case = load_case(f"ext/{ns}", name)
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    if name in KNOWN_FAILURES:
        assert problem is not None, f"{name} passes now: take it off KNOWN_FAILURES"
        pytest.xfail(KNOWN_FAILURES[name])
    assert problem is None, f"{name}: {problem}"
