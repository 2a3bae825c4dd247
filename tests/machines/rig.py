"""The multi-machine rig (manager/rig.py, shared with benchmarks/scaleout_bench.py) and the
tests' check that it can be built here."""

from manager.rig import MACHINES, Machine, Rig, wait_for, why_not_possible  # noqa: F401


def require_rig() -> None:
    """Skip the test when the rig cannot be built here; under CI=true fail instead."""
    import pytest

    from tests.conftest import IN_CI

    reason = why_not_possible()
    if reason:
        if IN_CI:
            pytest.fail(f"the multi-machine rig needs namespaces: {reason} (CI=true)")
        pytest.skip(f"cannot build the multi-machine rig here: {reason}")
