"""The receivers' write-ahead log: one segmented log per (tenant, plan, imported stream) at a
worker, appended before an event is answered as accepted. See log.py."""

from receivers.wal.log import DURABILITY_MODES, WriteAheadLog

__all__ = ["DURABILITY_MODES", "WriteAheadLog"]
