"""Errors of the topology package, all under one root: TopologyError."""

__all__ = [
    "TopologyError",
    "TopologyValidationError",
    "NoSpoutError",
    "DanglingInputError",
    "UnknownStreamError",
    "UnknownFieldError",
    "BadParallelismError",
    "DuplicateComponentError",
    "CycleError",
    "BadGroupingError",
    "ComponentClassError",
    "BadNameError",
    "RoutingError",
    "SettingsError",
    "UnknownSettingError",
    "SettingValueError",
    "ConfigFileError",
    "ClusterError",
    "ClusterStartError",
    "LaunchError",
    "TopologyExistsError",
    "ControlError",
    "TopologyNotFoundError",
    "WaitTimeoutError",
    "PackagingError",
]


class TopologyError(Exception):
    """Root of every error raised by the topology package."""


class TopologyValidationError(TopologyError, ValueError):
    """A topology definition is invalid; names the component and the bad value."""

    def __init__(self, message: str, component: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.component = component
        self.value = value


class NoSpoutError(TopologyValidationError):
    """A topology has no spout."""


class DanglingInputError(TopologyValidationError):
    """A bolt input names a component that does not exist, or a bolt has no input."""


class UnknownStreamError(TopologyValidationError):
    """An input or an emit names a stream its component does not declare."""


class UnknownFieldError(TopologyValidationError):
    """A fields grouping names a field the upstream stream does not declare."""


class BadParallelismError(TopologyValidationError):
    """A parallelism is not an integer of at least 1."""


class DuplicateComponentError(TopologyValidationError):
    """Two components share one id."""


class CycleError(TopologyValidationError):
    """The bolts' inputs form a cycle."""


class BadGroupingError(TopologyValidationError):
    """A grouping is not one of shuffle, fields, all, global (or is malformed)."""


class ComponentClassError(TopologyValidationError):
    """A component class cannot be imported or is not a Spout/Bolt subclass."""


class BadNameError(TopologyValidationError):
    """A topology, component or stream name is empty or not a string."""


class RoutingError(TopologyError):
    """A row cannot be routed (e.g. too short for its fields grouping)."""


# the settings loader's errors moved with it to cep.protocol
from cep.protocol.exceptions import (  # noqa: E402,F401
    ConfigFileError,
    SettingValueError,
    SettingsError,
    UnknownSettingError,
)


class ClusterError(TopologyError):
    """The Spark cluster is unavailable."""


class ClusterStartError(ClusterError):
    """The embedded Spark standalone cluster did not start."""


class LaunchError(TopologyError):
    """spark-submit could not start a topology."""


class PackagingError(LaunchError):
    """The project's code or its Python environment could not be packed for shipping."""


class TopologyExistsError(LaunchError):
    """A topology with that name is already running."""


class ControlError(TopologyError):
    """The running topology's driver did not answer a control request."""


class TopologyNotFoundError(ControlError):
    """No topology with that name is known."""


class WaitTimeoutError(ControlError):
    """A topology did not reach the awaited status in time."""
