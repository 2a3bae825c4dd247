"""Aligned barrier checkpoints (Flink's asynchronous barrier snapshots).

- ``store``: where snapshots live (a shared filesystem path, or Redis), one blob per
  instance, checksummed; ``metadata.json`` marks a checkpoint complete.
- ``barrier``: the alignment of one bolt instance's input channels.
- ``coordinator``: the driver's side: triggers checkpoints, collects acks, completes them,
  keeps the last K, chooses (and verifies) the restore point of each stage attempt.
"""

from topology.checkpoint.barrier import Aligner
from topology.checkpoint.coordinator import Coordinator
from topology.checkpoint.exceptions import CheckpointError, CorruptCheckpointError
from topology.checkpoint.store import FileStore, RedisStore, open_store, plan_key

__all__ = [
    "Aligner",
    "Coordinator",
    "CheckpointError",
    "CorruptCheckpointError",
    "FileStore",
    "RedisStore",
    "open_store",
    "plan_key",
]
