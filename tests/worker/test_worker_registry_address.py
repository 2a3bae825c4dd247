"""Where a distributed worker finds its manager's registry: the configured address when given
(--registry), else the one the manager reports at GET /api/v1/manager (never an assumed port
8904; tests/manager/test_manager_workers.py runs a manager whose registry is on a free port).
A manager that does not answer is a RegistryUnavailableError, and is asked again next time."""

import pytest

from cep.worker.managers import FailoverRegistry, ManagerSet
from manager.exceptions import RegistryUnavailableError
from tests.worker.test_worker_distributed import dead_url


def test_configured_registry_is_used_without_asking_the_manager():
    managers = ManagerSet([dead_url()], ["tcp://127.0.0.1:5555"], timeout=0.5)
    assert managers.registry(0) == "tcp://127.0.0.1:5555"


def test_unreachable_manager_means_registry_unavailable_and_is_asked_again():
    managers = ManagerSet([dead_url()], timeout=0.5)
    registry = FailoverRegistry(managers, timeout=0.5)
    for _ in range(2):  # nothing learned, nothing cached: each call asks the manager again
        with pytest.raises(RegistryUnavailableError, match="did not tell its registry address"):
            registry.lookup("receiver", -1234, "P", stream="S")
        assert managers.learned == {} and registry.url is None
    registry.close()
