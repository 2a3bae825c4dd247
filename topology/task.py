"""A component instance as a long-running task of the topology's barrier stage.

``make_task_function(spec, driver, options)`` returns the function Spark runs per partition:
it binds a PULL socket, exchanges endpoints with every other instance through
``BarrierTaskContext.allGather``, connects one PUSH socket per downstream task (high-water
marks bound every link, so a slow bolt blocks its upstreams: backpressure), then loops until
the driver says stop.
"""

import dataclasses
import json
import logging
import threading
import time

import zmq

from cep.security import curve
from cep.protocol import frames
from cep.protocol.exceptions import BadFrameError
from topology.checkpoint.participant import Participant
from topology.component import Batch
from topology.instance import Instance
from topology.model import Topology
from topology.task_watch import HOST, executor_id

log = logging.getLogger(__name__)
BURST = 64  # data messages handled per poll before checking control again


def make_task_function(spec, driver, options):
    """The mapPartitions function of the barrier stage (pickled to the executors)."""

    def run_partition(_rows):
        from pyspark import BarrierTaskContext

        ctx = BarrierTaskContext.get()
        topology = Topology.from_dict(spec)
        task_id = ctx.partitionId()
        host = ctx.getTaskInfos()[task_id].address.rsplit(":", 1)[0] or options["host"]
        runner = TaskRunner(topology, task_id, driver, options)
        runner.address = host  # the machine's address (status shows where each instance runs)
        try:
            endpoint = runner.bind(host)
            gathered = [
                json.loads(m) for m in ctx.allGather(json.dumps([endpoint, ctx.taskAttemptId()]))
            ]
            # the stage attempt: the smallest task attempt id of this attempt's tasks, the
            # same in every task and larger than any earlier attempt's
            runner.attempt = min(g[1] for g in gathered)
            runner.connect([g[0] for g in gathered])
            runner.run()
        finally:
            runner.close()
        if runner.aborted:  # another task of this attempt died: fail now, Spark re-runs it
            raise RuntimeError(
                f"task {task_id}: stage attempt {runner.attempt} aborted: "
                f"another task's process died"
            )
        if runner.superseded is not None:
            raise RuntimeError(stale_reason(task_id, runner.attempt, runner.superseded))
        return iter(())

    return run_partition


def superseded(mine, current):
    """True when the driver's current stage attempt `current` is newer than this task's
    `mine`: the task is a stale one (e.g. on a machine that was cut off while Spark ran the
    stage again elsewhere) and must stop, publishing nothing more."""
    return type(current) is int and mine >= 0 and current > mine


def stale_reason(task_id, mine, current):
    return (
        f"task {task_id}: stage attempt {mine} is not the current attempt {current} "
        f"(the stage runs again elsewhere, e.g. while this task's machine was cut off): "
        f"stopping without publishing more"
    )


class TaskRunner:
    """Sockets and the run loop around one Instance."""

    def __init__(self, topology, task_id, driver, options):
        cid, index = topology.tasks()[task_id]
        self.task_id, self.options = task_id, options
        self.generation = int(driver.get("generation", 0))  # the driver's start, ms
        self.zctx = zmq.Context()
        # CURVE: the keys come with the launch options, never on a command line
        self.security = curve.LinkSecurity.from_options(options.get("security"))
        self.keys = self.security.curve
        curve.start_authenticator(self.zctx, self.keys)
        self.report = self._socket(zmq.PUSH, connect=driver["reports"])
        self.reports_endpoint = driver["reports"]
        self._beating = threading.Event()  # set: the heartbeat thread stops
        self._beat_thread = None
        self.control = self._socket(zmq.SUB, connect=driver["tasks"])
        self.control.setsockopt(zmq.SUBSCRIBE, b"")
        self.instance = Instance(topology, cid, index, task_id, security=self.security)
        self.attempt = -1
        self.pull, self.pushes = None, {}
        self.state, self.seq = "inactive", -1
        self.aborted = False  # the driver saw a task of this attempt die (task_watch.py)
        self.superseded = None  # the driver's newer attempt: this task is a stale one
        self.instance.active = False
        self.ckpt = Participant(
            self.instance,
            topology,
            options.get("checkpoint"),
            self._forward_barrier,
            self._send_ack,
        )
        self.ckpt.process = self._execute_item
        self.wanted, self.restore_pin = None, None
        self.address = options.get("host", "")  # set to the executor's own address when known
        self.executor = executor_id()  # the driver kills it when this task goes silent

    @property
    def attempt(self):
        """The stage attempt this task belongs to (-1 until the tasks exchanged endpoints)."""
        return self._attempt

    @attempt.setter
    def attempt(self, value):
        """Also the component's context: publisher bolts fence their output with it."""
        self._attempt = value
        self.instance.context = dataclasses.replace(
            self.instance.context, attempt=value, generation=self.generation
        )

    def _socket(self, kind, connect=None, hwm=None):
        sock = self.zctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        (curve.client if connect else curve.server)(sock, self.keys)
        if hwm:
            push = kind == zmq.PUSH
            sock.setsockopt(zmq.SNDHWM if push else zmq.RCVHWM, hwm)
            sock.setsockopt(zmq.SNDBUF if push else zmq.RCVBUF, self.options["socket_buffer"])
        if connect:
            sock.connect(connect)
        return sock

    def bind(self, host):
        """Bind this task's input socket (bolts); returns its endpoint ('' for spouts)."""
        if self.instance.kind == "spout":
            return ""
        self.pull = self._socket(zmq.PULL, hwm=self.options["queue_batches"])
        port = self.pull.bind_to_random_port(f"tcp://{host}")
        return f"tcp://{host}:{port}"

    def connect(self, endpoints):
        """Connect a PUSH socket to every task this instance routes to."""
        targets = {t for routes in self.instance.routes.values() for r in routes for t in r.tasks}
        for task in sorted(targets):
            self.pushes[task] = self._socket(
                zmq.PUSH, connect=endpoints[task], hwm=self.options["queue_batches"]
            )

    def run(self):
        """Open the component, report ready, loop until stop."""
        self.instance.open()
        self._restore()
        self._send_report("ready")
        self._beat_thread = threading.Thread(
            target=self._heartbeat, daemon=True, name=f"task {self.task_id} heartbeat"
        )
        self._beat_thread.start()
        interval = self.options["metrics_interval_s"]
        next_report = time.monotonic() + interval
        step = self._spout_step if self.instance.kind == "spout" else self._bolt_step
        while self.state != "stop":
            step()
            self.ckpt.poll_acks()
            self._read_control(0)
            if time.monotonic() >= next_report:
                self._send_report("metrics")
                next_report = time.monotonic() + interval

    def _restore(self):
        """Wait for the driver's restore point of this stage attempt, then restore it."""
        if not self.ckpt.enabled:
            return
        deadline = time.monotonic() + 60
        while not (self.restore_pin and self.restore_pin[0] == self.attempt):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"task {self.task_id}: no restore point from the driver "
                    f"for stage attempt {self.attempt} within 60 s"
                )
            self._send_report("restoring")
            self._read_control(200)
        pin = self.restore_pin  # [attempt, checkpoint id or None, a restart?]
        self.ckpt.restore(pin[1], restarted=len(pin) > 2 and bool(pin[2]))

    def _spout_step(self):
        if self.wanted is not None:
            self.ckpt.trigger(self.wanted)
        if self.state != "active":
            self._read_control(100)
            return
        routed, origin = self.instance.poll_spout()
        if routed:
            self._send(routed, origin)
        else:
            self._read_control(self.options["idle_sleep_ms"])

    def _bolt_step(self):
        if not self.pull.poll(100):
            return
        for _ in range(BURST):
            try:
                head, payload = self.pull.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                stream, source, origin, channel, lineage = frames.decode_header(head)
            except BadFrameError as exc:
                self.instance.metrics.record_error(1, exc, "decode a header")
                continue
            aligner = self.ckpt.aligner
            if stream == frames.BARRIER and aligner is not None:
                aligner.receive(channel, barrier=origin)
            elif aligner is None or aligner.current is None:  # the usual case: no alignment
                self._execute_item((stream, source, origin, payload, lineage))
            else:
                aligner.receive(channel, (stream, source, origin, payload, lineage))

    def _execute_item(self, item):
        stream, source, origin, payload, lineage = item
        try:
            rows = frames.decode_rows(payload)
        except BadFrameError as exc:
            self.instance.metrics.record_error(1, exc, f"decode from {source}")
            return
        if lineage is not None and sum(run[2] for run in lineage) != len(rows):
            self.instance.metrics.record_error(
                len(rows),
                BadFrameError(
                    f"lineage counts {sum(r[2] for r in lineage)} rows, the payload has {len(rows)}"
                ),
                f"decode from {source}",
            )
            return
        self._send(self.instance.execute(Batch(rows, stream, source, origin, lineage)), origin)

    def _send(self, routed, origin):
        """Send routed parts; waits (backpressure) while a target's queue is full."""
        metrics = self.instance.metrics
        for task, stream, rows, lineage in routed:
            parts = (
                frames.header(
                    stream, self.instance.context.component_id, origin, self.task_id, lineage
                ),
                frames.encode_rows(rows),
            )
            if not self._push(task, parts):
                return
            metrics.record_send(task, len(rows))

    def _push(self, task, frames):
        """Send two frames to a task, waiting while its queue is full; False on stop."""
        sock = self.pushes[task]
        while True:
            try:
                sock.send_multipart(frames, zmq.NOBLOCK)
                return True
            except zmq.Again:
                started = time.perf_counter()
                sock.poll(50, zmq.POLLOUT)
                self.instance.metrics.backpressure_s += time.perf_counter() - started
                self._read_control(0)
                if self.state == "stop":
                    return False

    def _forward_barrier(self, checkpoint_id):
        """The barrier of a checkpoint on every output link (after the last batch)."""
        parts = frames.barrier(self.instance.context.component_id, checkpoint_id, self.task_id)
        for task in self.pushes:
            if not self._push(task, parts):
                return

    def _send_ack(self, report):
        report.update(attempt=self.attempt, seq=self.seq)
        for _ in range(100):  # an ack must not be lost to a momentarily full report queue
            try:
                self.report.send(frames.pack_message(report), zmq.NOBLOCK)
                return
            except zmq.Again:
                time.sleep(0.01)

    def _read_control(self, timeout_ms):
        """Apply the newest control message; report at once when its seq is new."""
        if not self.control.poll(timeout_ms):
            return
        message = None
        while True:
            try:
                message = frames.unpack_message(self.control.recv(zmq.NOBLOCK))
            except zmq.Again:
                break
        state, seq = message["state"], message["seq"]
        if message.get("abort") is not None and message["abort"] == self.attempt:
            self.aborted, state = True, "stop"
        if superseded(self.attempt, message.get("attempt")):
            if self.superseded is None:
                log.warning("%s", stale_reason(self.task_id, self.attempt, message["attempt"]))
                hook = getattr(self.instance.component, "superseded", None)
                if callable(hook):  # publisher bolts drop what they queued
                    hook()
            self.superseded, state = message["attempt"], "stop"
        self.wanted, self.restore_pin = message.get("checkpoint"), message.get("restore")
        if message.get("completed") is not None:
            self.ckpt.completed(message["completed"])
        if state != self.state and state != "stop":
            self.instance.set_active(state == "active")
        self.state = state
        if seq != self.seq:
            self.seq = seq
            self._send_report("metrics")

    def _send_report(self, kind):
        data = self.instance.metrics.snapshot()
        data.update(
            type=kind,
            attempt=self.attempt,
            seq=self.seq,
            host=HOST,
            executor=self.executor,
            address=self.address,
            active=self.instance.active,
            kind=self.instance.kind,
        )
        custom = getattr(self.instance.component, "custom_metrics", None)
        if custom:
            try:
                data["custom"] = custom()
            except Exception as exc:  # noqa: BLE001
                data["custom"] = {"error": str(exc)}
        try:
            self.report.send(frames.pack_message(data), zmq.NOBLOCK)
        except zmq.Again:
            pass

    def _heartbeat(self):
        """Tell the driver every metrics interval that this task and its link live, from its
        own thread and socket: a task thread busy or blocked (backpressure) still counts as
        heard (the driver's topology.task_silence_s)."""
        sock = self._socket(zmq.PUSH, connect=self.reports_endpoint)
        ctx = self.instance.context
        beat = frames.pack_message(
            {
                "type": "heartbeat",
                "task": self.task_id,
                "attempt": self.attempt,
                "component": ctx.component_id,
                "index": ctx.index,
            }
        )
        try:
            while not self._beating.wait(self.options["metrics_interval_s"]):
                try:
                    sock.send(beat, zmq.NOBLOCK)
                except zmq.Again:
                    pass
        finally:
            sock.close(0)

    def close(self):
        """Close the component, send a last report, close sockets."""
        self._beating.set()
        if self._beat_thread is not None:
            self._beat_thread.join(timeout=2)
        self.ckpt.close()
        self.instance.close()
        self._send_report("stopped")
        time.sleep(0.05)
        curve.stop_authenticator(self.zctx)
        self.zctx.destroy(linger=200)
