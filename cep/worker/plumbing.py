"""The parts every deployed plan shares: router keys, sources of imported streams, sinks of
exported streams (their @sink specs, else the worker's default sink)."""

import logging
import os

from cep.worker.config import host_policy
from cep.worker.exceptions import PlanDeployError
from cep.worker.wal_book import path_part
from publishers.exceptions import PublisherError
from publishers.marks_log import MarksLog
from publishers.sink_set import SinkSet
from receivers.exceptions import ReceiverError
from receivers.limits import ReceiverLimits
from receivers.sources import build_source
from receivers.validation import StreamKey

log = logging.getLogger(__name__)


def stream_key(spec, stream):
    """The router key of one stream of a plan (tenant as it appears in URLs)."""
    return StreamKey(str(spec.tenant), spec.name, stream)


def default_sink_spec(cfg, spec, stream):
    """The worker's default sink for an exported stream without @sink."""
    if cfg["sinks.default"] == "file":
        path = os.path.join(cfg["sinks.dir"], str(spec.tenant), spec.name, f"{stream}.jsonl")
        return {"type": "file", "options": {"path": path}}
    return {"type": "log", "options": {"prefix": f"[{spec.tenant}:{spec.name}:{stream}] "}}


def build_sink_set(cfg, spec, memory=None, marks_root=None):
    """A SinkSet for every exported stream of the plan; PlanDeployError on bad @sink settings
    or on one the host policy refuses (the worker's own default sink is not confined).

    `memory` (the worker's dict, kept across deployments): the plan's duplicate marks and
    fences outlive a redeploy of the plan in this process (a self-undeploy while no manager
    answered, a restart of the plan's services), so results its topology replays after the
    plan is back are still recognised as duplicates and a stale attempt stays fenced. A new
    topology's publisher bolts start fresh, which clears their marks (delivery.Dedup).
    `marks_root` (with `delivery.marks` fsync or os): the marks also outlive the process, in
    `<marks_root>/<tenant>/<plan>.marks` (publishers/marks_log.py), loaded at the plan's
    first deployment in this process."""
    specs = {s.stream: [{**x, "definition": s.definition} for x in s.specs] for s in spec.exported}
    try:
        sset = SinkSet.from_specs(
            specs,
            label=f"{spec.tenant}/{spec.name}",
            policy=host_policy(cfg),
            tenant=spec.tenant,
            default=lambda stream: default_sink_spec(cfg, spec, stream),
            delivery=cfg["delivery.default"],
            dedup=cfg["delivery.dedup"],
        )
    except PublisherError as exc:
        raise PlanDeployError(f"plan {spec.name}: {exc}") from None
    if memory is not None:
        if spec.key not in memory and marks_root and cfg["delivery.marks"] != "off":
            open_marks(sset.dedup, marks_path(marks_root, spec), cfg["delivery.marks"], sset.label)
        sset.dedup, sset.fences = memory.setdefault(spec.key, (sset.dedup, sset.fences))
    return sset


def marks_path(root, spec):
    """The duplicate marks file of a plan under the worker's marks folder."""
    return os.path.join(root, path_part(spec.tenant), f"{path_part(spec.name)}.marks")


def open_marks(dedup, path, durability, label=""):
    """Keep `dedup`'s marks in `path` (loading what is there); a file that cannot be opened
    or written leaves the marks in memory, with the reason logged: the plan still runs.
    `label` names the plan in log lines."""
    try:
        MarksLog(path, durability, label or os.path.basename(path)).open(dedup)
    except OSError as exc:
        log.error(
            "duplicate marks file %s cannot be used (%s): the marks stay in memory, and a "
            "worker restart forgets them",
            path,
            exc,
        )


def close_marks(memory, key=None, remove=False):
    """Close the marks files of the plan `key` (every plan when None), syncing them;
    `remove`: delete the file too (the plan was removed)."""
    for k in [key] if key is not None else list(memory):
        kept = memory.get(k)
        store = kept[0].store if kept is not None else None
        if store is not None:
            store.close(remove=remove)
            kept[0].store = None


def check_policy(spec, cfg):
    """PlanDeployError when a compiled plan (standalone) breaks the host policy's limits,
    file roots or allow-lists (the manager checks distributed plans when they are added)."""
    from cep.policy import PlanPolicyError, check_plan

    try:
        check_plan(spec.plan, host_policy(cfg), spec.tenant)
    except PlanPolicyError as exc:
        raise PlanDeployError(f"plan {spec.name}: {exc}") from None


def start_sources(spec, router, cfg=None, threads=None):
    """Start the @source of every imported stream (http/zmq/file); returns them to stop later.
    With `cfg`, file sources are confined by the worker's host policy; with `threads` (the
    worker's ThreadBook) their threads are supervised. A source that fails to build or start
    (any error: a port in use is a ZMQError) stops the ones already started: no port stays
    open for a plan that is not running."""
    started = []
    policy = host_policy(cfg) if cfg is not None else None
    limits = ReceiverLimits.from_config(cfg) if cfg is not None else None
    try:
        for s in spec.imported:
            for src in s.specs:
                options = {"type": src["type"], **src.get("options", {})}
                source = build_source(
                    options,
                    router,
                    stream_key(spec, s.stream),
                    policy,
                    limits,
                    src.get("map"),
                    cfg["worker.state_dir"] if cfg is not None else None,
                )
                started.append(source)
                _supervise(threads, source, f"source {spec.tenant}/{spec.name}/{s.stream}")
                source.start()
    except (ReceiverError, OSError) as exc:
        stop_all(started)
        raise PlanDeployError(f"plan {spec.name}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - e.g. zmq.ZMQError: address in use
        stop_all(started)
        raise PlanDeployError(
            f"plan {spec.name}: @source failed: {type(exc).__name__}: {exc}"
        ) from None
    return started


def _supervise(threads, source, name):
    """Put a source's loop under the worker's supervisor (ZeroMQ and file sources)."""
    inner = getattr(source, "receiver", source)  # a ZmqSource wraps its ZmqReceiver
    if threads is not None and hasattr(inner, "_run") and hasattr(inner, "_stop"):
        threads.adopt(inner, name)


def stop_all(parts):
    """Stop sources, services or connections, logging (not raising) failures."""
    for part in parts:
        try:
            part.stop()
        except Exception:  # stopping must reach every part
            log.exception("stopping %r failed", part)
