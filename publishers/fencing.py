"""Fencing of stale publisher bolts: a worker takes output only from a topology's newest
stage attempt.

After a network partition longer than Spark's timeouts, Spark runs the barrier stage again
on the other machines; the cut-off machine's tasks (zombies) may still run when the link
returns, and the frames its publisher bolt queued may still arrive. Each frame carries the
sending task's fence `(driver generation, stage attempt)` (cep/protocol/frames.py): the
driver's start time in ms, then the stage attempt (larger for every re-run). Fencing tokens
(as a lock service's): the worker remembers per topology the highest fence it has seen, and
refuses (counts, never writes) a frame with a lower one. A new attempt's publisher bolts send
their start notice before any output, so once the new attempt is heard from, nothing of the
old one is taken. Frames without a fence (older senders) are taken as before.

The generation orders the drivers of one topology (a resubmission starts a new one); it is
wall-clock time, so drivers of one topology started on hosts whose clocks differ by more than
the time between two starts could be ordered wrongly."""

from typing import Optional

from cep.protocol.frames import Fence


def topology_of(publisher: str) -> str:
    """The topology of a publisher bolt id `<topology>:<component>:<index>`."""
    return publisher.rsplit(":", 2)[0]


class Fences:
    """Per topology, the newest fence seen; `admit` says whether a frame may be taken."""

    def __init__(self) -> None:
        self.newest: dict[str, Fence] = {}
        self.refused: dict[str, int] = {}  # publisher id -> frames refused as stale
        self.refused_events = 0

    def admit(self, publisher: str, fence: Optional[Fence], events: int = 0) -> bool:
        """True when a frame of `publisher` with `fence` comes from its topology's newest
        attempt seen so far (which it may raise); False (counted) for an older attempt."""
        if fence is None:
            return True
        fence = (int(fence[0]), int(fence[1]))
        topology = topology_of(publisher)
        newest = self.newest.get(topology)
        if newest is None or fence >= newest:
            self.newest[topology] = fence
            return True
        self.refused[publisher] = self.refused.get(publisher, 0) + 1
        self.refused_events += events
        return False

    def metrics(self) -> dict:
        """{"fenced_frames", "fenced_events", "fences": {topology: [generation, attempt]}}."""
        return {
            "fenced_frames": sum(self.refused.values()),
            "fenced_events": self.refused_events,
            "fences": {t: list(f) for t, f in self.newest.items()},
        }
