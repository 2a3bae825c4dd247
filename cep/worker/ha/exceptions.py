"""Errors of the standalone HA pair (cep/worker/ha), under the worker's root error type."""

from cep.worker.exceptions import WorkerConfigError, WorkerError
from receivers.wal.exceptions import LogFullError


class HaError(WorkerError):
    """Root of every error of the active/passive pair."""


class HaConfigError(WorkerConfigError, HaError):
    """An ha.* setting is invalid or does not fit the worker's mode."""


class PeerError(HaError):
    """The peer did not answer, is not a CEP worker with HA, or refused our cluster secret."""


class PlanMismatchError(PeerError):
    """The peer runs another version of a plan (or does not run it): no sync for that plan."""


class SyncError(HaError):
    """A state sync (engine snapshot from the active) failed or does not fit this plan."""


class LeaseError(HaError):
    """The Redis lease cannot be read or written (Redis is down or refuses us)."""


class PassiveNodeError(LogFullError, HaError):
    """Events sent to the passive node of a pair in forward mode: it answers 503 (retry) and
    names the active; the receivers treat it like back-pressure, so nothing is lost."""
