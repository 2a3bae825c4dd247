"""Manager processes for the fail-over tests: the harness lives in manager.testing, which
benchmarks/failover_bench.py uses too."""

from manager.testing import CEP, ManagerProc, free_port, http, login, wait_until  # noqa: F401
