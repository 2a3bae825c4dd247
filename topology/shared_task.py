"""Several component instances as threads of one Python worker (shared packing).

``make_packed_task_function(spec, driver, options, groups)`` is the barrier stage's function
when a Spark task runs the instances ``groups[partition]`` instead of one: each instance is
the usual ``TaskRunner`` (its own sockets, metrics and reports, the same wire protocol) on
its own thread. The endpoints of all instances are exchanged with ``allGather`` (skipped
when the stage has one task, which saves Spark's one-second barrier sync). If one instance
fails, the others of its worker stop and the task fails: Spark re-runs the stage, as it
does for a single instance.
"""

import json
import logging
import threading

from topology.model import Topology
from topology.task import TaskRunner, stale_reason

log = logging.getLogger(__name__)


class PackedRunner(TaskRunner):
    """A TaskRunner that its worker can stop when a sibling instance failed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.abort = False

    def _read_control(self, timeout_ms):
        super()._read_control(timeout_ms)
        if self.abort:
            self.state = "stop"


def make_packed_task_function(spec, driver, options, groups):
    """The mapPartitions function of a packed barrier stage (pickled to the executors)."""

    def run_partition(_rows):
        from pyspark import BarrierTaskContext

        ctx = BarrierTaskContext.get()
        topology = Topology.from_dict(spec)
        part = ctx.partitionId()
        host = ctx.getTaskInfos()[part].address.rsplit(":", 1)[0] or options["host"]
        runners = [PackedRunner(topology, task, driver, options) for task in groups[part]]
        try:
            local = [runner.bind(host) for runner in runners]
            gathered = _gather(ctx, local, len(groups))
            endpoints = {
                task: endpoint
                for p, (eps, _) in enumerate(gathered)
                for task, endpoint in zip(groups[p], eps)
            }
            attempt = min(g[1] for g in gathered)
            for runner in runners:
                runner.attempt = attempt
                runner.connect(endpoints)
            run_threads(runners, topology.name)
        finally:
            for runner in runners:
                runner.close()
        stale = [r for r in runners if r.superseded is not None]
        if stale:  # the stage runs again elsewhere: this task's attempt is over
            raise RuntimeError(
                stale_reason(stale[0].task_id, stale[0].attempt, stale[0].superseded)
            )
        return iter(())

    return run_partition


def _gather(ctx, local, parts):
    """[(endpoints, task attempt id)] of every task of the stage, in partition order."""
    mine = [local, ctx.taskAttemptId()]
    if parts == 1:
        return [mine]
    return [json.loads(m) for m in ctx.allGather(json.dumps(mine))]


def run_threads(runners, name):
    """Run each runner on its own thread until all stop; re-raise the first failure after
    stopping the others."""
    errors = []

    def target(runner):
        try:
            runner.run()
        except BaseException as exc:  # noqa: BLE001 - the task must fail with it
            log.exception("[%s] task %d failed", name, runner.task_id)
            errors.append(exc)
            runner.instance.metrics.record_error(0, exc, "task")  # the driver's reason
            runner._send_report("failed")
            for other in runners:
                other.abort = True

    threads = [
        threading.Thread(target=target, args=(r,), daemon=True, name=f"{name}:task-{r.task_id}")
        for r in runners
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
