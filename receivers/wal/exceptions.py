"""Errors of the receivers' write-ahead log, under the receivers package's root error."""

from receivers.exceptions import ReceiverError


class WalError(ReceiverError):
    """Root of every write-ahead log error."""


class WalConfigError(WalError):
    """A wal.* setting has a bad value (durability mode, sizes, ages)."""


class CorruptRecordError(WalError):
    """A log record fails its CRC32 or its header is impossible; its events are never returned."""


class LogFullError(WalError):
    """The log is over wal.max_bytes or wal.max_age_s: back-pressure (answer 503), not loss."""


class WalClosedError(WalError):
    """An append or read reached a log that was closed (its plan was torn down)."""
