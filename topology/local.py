"""In-process runner: run a topology in one thread, without Spark or sockets.

    result = run_local(topology)            # until every spout is idle
    result.components["count"][0].counts    # the bolt objects, to inspect their state
    result.metrics                          # same shape as TopologyHandle.metrics()

Batches are delivered depth-first, in emit order, with the same groupings, stable hash and
error isolation as on Spark; useful for unit tests of spouts and bolts.

Checkpoints: ``run_local(t, store=FileStore(...), checkpoint_every=10)`` makes every spout
start checkpoint n at round ``n * checkpoint_every + spout_position * stagger`` (a stagger
makes bolts with several inputs buffer the early inputs while they align, as on Spark);
a checkpoint completes when every instance acked. ``restore=True`` first restores every
instance from the store's newest complete checkpoint.
"""

import time
from collections import deque
from dataclasses import dataclass, field

from topology.checkpoint.participant import Participant
from topology.component import Batch
from topology.instance import Instance
from topology.metrics import add_queue_depths, by_component


@dataclass
class LocalResult:
    """What run_local returns: component objects per id, metrics, batches delivered."""

    components: dict
    metrics: dict
    batches: int
    checkpoints: list = field(default_factory=list)  # ids completed in this run
    restored_from: object = None


def run_local(
    topology,
    max_batches=None,
    idle_rounds=1,
    timeout=60.0,
    store=None,
    checkpoint_every=None,
    stagger=0,
    restore=False,
):
    """Run until every spout returned nothing ``idle_rounds`` times in a row (or limits hit)."""
    topology.validate()
    run = _LocalRun(topology, store)
    for inst in run.instances.values():
        inst.open()
    restored = run.restore() if restore and store is not None else None
    spouts = [i for i in run.instances.values() if i.kind == "spout"]
    delivered, idle, rounds, deadline = 0, 0, 0, time.monotonic() + timeout
    try:
        while idle < idle_rounds and time.monotonic() < deadline:
            produced = False
            for position, spout in enumerate(spouts):
                run.maybe_trigger(spout, rounds - position * stagger, checkpoint_every)
                routed, origin = spout.poll_spout()
                produced = produced or bool(routed)
                delivered += run.deliver(
                    spout,
                    [(task, (stream, rows, lineage)) for task, stream, rows, lineage in routed],
                    origin,
                )
            rounds += 1
            idle = 0 if produced else idle + 1
            if max_batches is not None and delivered >= max_batches:
                break
    finally:
        for inst in sorted(run.instances.values(), key=lambda i: i.kind != "spout"):
            inst.close()
    return _result(topology, run, delivered, restored)


class _LocalRun:
    """Instances, their checkpoint participants and the depth-first delivery."""

    def __init__(self, topology, store):
        self.store, self.completed, self.acks = store, [], {}
        self.next_id = store.next_id() if store is not None else 1
        self.instances = {
            task: Instance(topology, cid, index, task)
            for task, (cid, index) in enumerate(topology.tasks())
        }
        self.parts, self.produced = {}, []
        for task, inst in self.instances.items():
            part = Participant(
                inst,
                topology,
                {},
                lambda cid, t=task: self._forward(t, cid),
                self._ack,
                store=store,
                asynchronous=False,
            )
            part.process = lambda item, t=task: self._execute(t, item)
            self.parts[task] = part

    def restore(self):
        done = self.store.completed()
        if not done:
            return None
        for part in self.parts.values():
            part.restore(done[-1])
        self.next_id = max(self.next_id, done[-1] + 1)
        return done[-1]

    def maybe_trigger(self, spout, round_no, every):
        """Start checkpoint n at this spout's round n * every (n >= 1)."""
        if self.store is None or not every or round_no <= 0 or round_no % every:
            return
        cid = self.next_id - 1 + round_no // every
        self.parts[spout.context.task_id].trigger(cid)
        self.deliver(spout, self._take(), 0.0)

    def _take(self):
        produced, self.produced = self.produced, []
        return [item for _, item in produced] if produced else []

    def deliver(self, source, routed, origin):
        """Deliver output (and everything it causes) depth-first; returns batch count."""
        queue = deque((source.context.task_id, item) for item in routed)
        count = 0
        while queue:
            sender, (task, payload) = queue.popleft()
            part = self.parts[task]
            if isinstance(payload, int):  # a checkpoint barrier
                part.receive(sender, barrier=payload)
            else:
                stream, rows, lineage = payload
                self.instances[sender].metrics.record_send(task, len(rows))
                item = (sender, stream, rows, origin, lineage)
                part.receive(sender, item) if part.aligner else self._execute(task, item)
                count += 1
            produced, self.produced = self.produced, []
            queue.extendleft(reversed(produced))
        return count

    def _execute(self, task, item):
        sender, stream, rows, origin, lineage = item
        source = self.instances[sender].context.component_id
        out = self.instances[task].execute(Batch(rows, stream, source, origin, lineage))
        self.produced.extend((task, (t, (s, r, g))) for t, s, r, g in out)

    def _forward(self, task, cid):
        for target in sorted(_targets(self.instances[task])):
            self.produced.append((task, (target, cid)))

    def _ack(self, report):
        cid = report["id"]
        self.acks.setdefault(cid, {})[report["task"]] = report
        if len(self.acks[cid]) == len(self.instances) and not report.get("error"):
            self.store.complete(cid, {"tasks": len(self.instances)})
            self.completed.append(cid)
            for part in self.parts.values():
                part.completed(cid)


def _targets(instance):
    return {t for routes in instance.routes.values() for r in routes for t in r.tasks}


def _result(topology, run, delivered, restored):
    snaps = add_queue_depths([i.metrics.snapshot() for i in run.instances.values()])
    components = {}
    for inst in run.instances.values():
        components.setdefault(inst.context.component_id, []).append(inst.component)
    return LocalResult(components, by_component(snaps), delivered, run.completed, restored)
