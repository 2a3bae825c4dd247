"""A fake topology launcher for fast unit tests of the manager: it lives in manager.testing,
which the benchmarks use too."""

from manager.testing import FakeHandle, FakeLauncher  # noqa: F401
