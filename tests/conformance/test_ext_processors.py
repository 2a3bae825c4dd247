"""Siddhi 3.2.15's own extension tests for the stream-processor extensions (reorder, timeseries,
markov-models) and the Kalman filter, with the outputs the real engine gave, through `cep run`'s
code path, in-process."""

import os

import pytest

from tests.conformance.conformance import CASES, check_case, load_case, run_in_process

FOLDERS = ("reorder", "timeseries", "kalman-filter", "markov-models")
CASES_EXT = [
    (f, n)
    for f in FOLDERS
    for n in sorted(os.listdir(os.path.join(CASES, "ext", f)))
    if n.endswith(".yaml")
]

# case -> why it cannot pass (each is checked to still fail, so a fix shows up)
KNOWN_FAILURES = {}


def test_the_corpus_is_there():
    assert len(CASES_EXT) >= 50


@pytest.mark.parametrize("folder,name", CASES_EXT)
def test_ext_processor_case(folder, name, tmp_path):
    case = load_case(os.path.join("ext", folder), name)
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    if name in KNOWN_FAILURES:
        assert problem is not None, f"{name} passes now: take it off KNOWN_FAILURES"
        pytest.xfail(KNOWN_FAILURES[name])
    assert problem is None, f"{name}: {problem}"
