"""Errors of the shared protocol, under ProtocolError."""


class ProtocolError(Exception):
    """Root of the protocol errors."""


class BadFrameError(ProtocolError, ValueError):
    """A frame does not decode, has an unknown format version or an ill-typed field."""


class RegistryError(ProtocolError):
    """A registry request failed; `name` is the error name sent on the wire."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class RegistryUnavailableError(RegistryError):
    """The registry did not answer within the timeout."""

    def __init__(self, message: str) -> None:
        super().__init__("Unavailable", message)


class SettingsError(ProtocolError):
    """Configuration could not be loaded."""


class UnknownSettingError(SettingsError):
    """A configuration file or override names a setting that is not declared."""


class SettingValueError(SettingsError, ValueError):
    """A setting's value does not convert to its declared type."""


class ConfigFileError(SettingsError):
    """A configuration file is unreadable or not a YAML mapping of sections."""
