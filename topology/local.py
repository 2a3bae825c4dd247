"""In-process runner: run a topology in one thread, without Spark or sockets.

    result = run_local(topology)            # until every spout is idle
    result.components["count"][0].counts    # the bolt objects, to inspect their state
    result.metrics                          # same shape as TopologyHandle.metrics()

Batches are delivered depth-first, in emit order, with the same groupings, stable hash and
error isolation as on Spark; useful for unit tests of spouts and bolts.
"""
import time
from collections import deque
from dataclasses import dataclass

from topology.component import Batch
from topology.instance import Instance
from topology.metrics import add_queue_depths, by_component


@dataclass
class LocalResult:
    """What run_local returns: component objects per id, metrics, batches delivered."""
    components: dict
    metrics: dict
    batches: int


def run_local(topology, max_batches=None, idle_rounds=1, timeout=60.0):
    """Run until every spout returned nothing ``idle_rounds`` times in a row (or limits hit)."""
    topology.validate()
    instances = _instances(topology)
    for inst in instances.values():
        inst.open()
    spouts = [i for i in instances.values() if i.kind == "spout"]
    delivered, idle, deadline = 0, 0, time.monotonic() + timeout
    try:
        while idle < idle_rounds and time.monotonic() < deadline:
            produced = False
            for spout in spouts:
                routed, origin = spout.poll_spout()
                produced = produced or bool(routed)
                delivered += _deliver(instances, spout, routed, origin)
            idle = 0 if produced else idle + 1
            if max_batches is not None and delivered >= max_batches:
                break
    finally:
        for inst in sorted(instances.values(), key=lambda i: i.kind != "spout"):
            inst.close()
    return _result(topology, instances, delivered)


def _instances(topology):
    return {task: Instance(topology, cid, index, task)
            for task, (cid, index) in enumerate(topology.tasks())}


def _deliver(instances, source, routed, origin):
    """Deliver routed output (and everything it causes) depth-first; returns batch count."""
    queue = deque((source, item) for item in routed)
    count = 0
    while queue:
        sender, (task, stream, rows) = queue.popleft()
        sender.metrics.record_send(task, len(rows))
        target = instances[task]
        batch = Batch(rows, stream, sender.context.component_id, origin)
        queue.extendleft(reversed([(target, item) for item in target.execute(batch)]))
        count += 1
    return count


def _result(topology, instances, delivered):
    snaps = add_queue_depths([i.metrics.snapshot() for i in instances.values()])
    components = {}
    for inst in instances.values():
        components.setdefault(inst.context.component_id, []).append(inst.component)
    return LocalResult(components, by_component(snaps), delivered)
