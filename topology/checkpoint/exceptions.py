"""Errors of the checkpoint package."""

from topology.exceptions import TopologyError


class CheckpointError(TopologyError):
    """A checkpoint could not be written, listed or read."""


class CorruptCheckpointError(CheckpointError):
    """A snapshot blob failed its checksum or does not decode; names the file or key."""
