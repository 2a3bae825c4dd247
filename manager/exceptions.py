"""Errors of the manager package, all under one root: ManagerError."""


class ManagerError(Exception):
    """Root of every error raised by the manager package."""

    status = 500  # the HTTP status the REST API answers with

    def to_dict(self):
        return {"error": type(self).__name__, "message": str(self)}


class ConfigError(ManagerError):
    """A manager setting is missing or has a bad value."""


class StoreError(ManagerError):
    """The plan store cannot read or write (disk, Redis)."""


class BadTenantError(ManagerError):
    """A tenant id is not an ASCII integer in the 32-bit signed range."""

    status = 400


class BadPlanNameError(ManagerError):
    """A plan name is not 1-100 letters, digits, '_', '.' or '-', or is '.' or '..'."""

    status = 400


class PlanNotFoundError(ManagerError):
    """No plan of that name exists for the tenant."""

    status = 404


class PlanExistsError(ManagerError):
    """A plan of that name already exists for the tenant (use edit)."""

    status = 409


class PlanRejectedError(ManagerError):
    """A plan failed to compile or to pass the distributed-mode checks; carries the errors."""

    status = 400

    def __init__(self, message, errors=()):
        super().__init__(message)
        self.errors = list(errors)  # dicts: error, message, line, column, endLine, endColumn

    def to_dict(self):
        d = {"error": type(self).__name__, "message": str(self), "errors": self.errors}
        if self.errors:
            for key in ("line", "column", "endLine", "endColumn"):
                if key in self.errors[0]:
                    d[key] = self.errors[0][key]
        return d


class QueryPlanError(ManagerError):
    """The XML query plan cannot be built or does not validate against its schema."""

    status = 400

    def __init__(self, message, span=None):
        super().__init__(message)
        self.span = span if span is not None and getattr(span, "line", 0) else None

    def to_dict(self):
        d = {"error": type(self).__name__, "message": str(self)}
        if self.span is not None:
            d.update(self.span.to_dict())
        return d


class DistributionError(QueryPlanError):
    """A plan breaks a rule of distributed mode (@dist, partitions, group names)."""


class TopologyBuildError(ManagerError):
    """A topology cannot be built from the XML query plan."""


class DeployError(ManagerError):
    """A topology could not be submitted, killed or queried."""


# registry errors: the shared protocol's (cep/protocol/exceptions.py), raised by both sides
from cep.protocol.exceptions import RegistryError, RegistryUnavailableError  # noqa: E402,F401


class FencedWriteError(StoreError):
    """A write to the shared store was refused: this manager's fencing token is not the newest
    (another manager took the leader lease), or it holds no lease at all."""

    status = 409


class InsecureTopologyError(ManagerError):
    """A topology would listen beyond loopback without CURVE: the manager does not deploy it."""
