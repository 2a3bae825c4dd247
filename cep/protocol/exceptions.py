"""Errors of the shared protocol, under ProtocolError."""


class ProtocolError(Exception):
    """Root of the protocol errors."""


class BadFrameError(ProtocolError, ValueError):
    """A frame does not decode, has an unknown format version or an ill-typed field."""


class RegistryError(ProtocolError):
    """A registry request failed; `name` is the error name sent on the wire."""

    def __init__(self, name, message):
        super().__init__(message)
        self.name = name


class RegistryUnavailableError(RegistryError):
    """The registry did not answer within the timeout."""

    def __init__(self, message):
        super().__init__("Unavailable", message)
