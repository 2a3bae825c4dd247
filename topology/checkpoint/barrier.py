"""Barrier alignment of one bolt instance (Flink's aligned checkpoints).

A bolt's input *channels* are the upstream tasks that send to it. When the barrier of
checkpoint n arrives on a channel, later messages of that channel are buffered until the
barrier came on every channel; then the bolt snapshots (``complete(n, alignment_s)``),
forwards the barrier and processes the buffered messages in their order. A barrier with a
higher id than the one being aligned abandons the older checkpoint (the driver times it out);
a lower id is stale and ignored. Messages of channels not yet at the barrier go straight on.
"""

import time
from collections import deque


def input_channels(topology, task_id):
    """The upstream task ids that route to ``task_id`` (each is one barrier channel)."""
    cid, _ = topology.tasks()[task_id]
    task_ids = topology.task_ids()
    channels = set()
    for inp in topology.components[cid].inputs:
        channels.update(task_ids[inp.source])
    return channels


class Aligner:
    """Feed every message with ``receive``; ``process(item)`` handles data in a valid order,
    ``complete(checkpoint id, alignment seconds)`` runs once all channels sent the barrier."""

    def __init__(self, channels, process, complete):
        self.channels = frozenset(channels)
        self.process, self.complete = process, complete
        self.current, self.arrived = None, set()
        self.buffer = deque()
        self.started = 0.0
        self.abandoned = 0
        self.buffered_max = 0

    @property
    def aligning(self):
        return self.current is not None

    def receive(self, channel, item=None, barrier=None):
        """One message from ``channel``: data (``item``) or the barrier with id ``barrier``."""
        if self.current is not None and channel in self.arrived:
            self.buffer.append((channel, item, barrier))
            self.buffered_max = max(self.buffered_max, len(self.buffer))
        elif barrier is None:
            self.process(item)
        else:
            self._barrier(channel, barrier)

    def _barrier(self, channel, cid):
        if self.current is not None and cid < self.current:
            return  # stale: a newer checkpoint is already being aligned
        if self.current is None or cid > self.current:
            if self.current is not None:
                self.abandoned += 1
            held, self.buffer = self.buffer, deque()
            self.current, self.arrived, self.started = cid, set(), time.perf_counter()
            self.arrived.add(channel)
            for item in held:  # from channels not blocked for the new id: they go on
                self.receive(*item)
        else:
            self.arrived.add(channel)
        if self.current == cid and self.arrived >= self.channels:
            waited = time.perf_counter() - self.started
            self.current, self.arrived = None, set()
            self.complete(cid, waited)
            held, self.buffer = self.buffer, deque()
            for item in held:
                self.receive(*item)
