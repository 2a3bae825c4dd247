"""Errors of the receivers package, under one root type."""


class ReceiverError(Exception):
    """Root of every error raised by the receivers package."""


class BadPayloadError(ReceiverError):
    """A request or message body is not an event, a list of events, or decodable at all."""


class UnknownStreamError(ReceiverError):
    """Events were addressed to a tenant/plan/stream that this worker does not serve."""


class SourceConfigError(ReceiverError):
    """A `@source(...)` annotation or source setting is missing a key or has a bad value."""


class SourceReadError(ReceiverError):
    """A source could not read its input (file missing, socket failed)."""


class StreamPausedError(ReceiverError):
    """The worker does not take events for this stream now (it reached no manager
    and undeployed its distributed plans); `reason` says why, the sender should retry."""

    def __init__(self, message, reason="paused"):
        super().__init__(message)
        self.reason = reason
