"""Errors of the CEP worker, under one root type."""

from cep.errors import CepError


class WorkerError(CepError):
    """Root of every error raised by the CEP worker."""


class WorkerConfigError(WorkerError):
    """The worker configuration (conf/worker.yaml, CEP_* env vars, flags) is invalid."""


class ManagerUnavailableError(WorkerError):
    """No manager in the configured address list answered."""


class DeploymentFormatError(WorkerError):
    """The manager's deployment description of a plan is missing a field or malformed."""


class PlanLoadError(WorkerError):
    """A local plan file (standalone mode) cannot be read or compiled."""


class PlanDeployError(WorkerError):
    """A plan could not be started on this worker (bad source/sink settings, engine failure)."""
