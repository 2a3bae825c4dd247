"""The parts every deployed plan shares: router keys, sources of imported streams, sinks of
exported streams (their @sink specs, else the worker's default sink)."""
import logging
import os

from cep.worker.exceptions import PlanDeployError
from publishers.exceptions import PublisherError
from publishers.sink_set import SinkSet
from receivers.exceptions import ReceiverError
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


def build_sink_set(cfg, spec):
    """A SinkSet for every exported stream of the plan; PlanDeployError on bad @sink settings."""
    specs = {s.stream: list(s.specs) or [default_sink_spec(cfg, spec, s.stream)]
             for s in spec.exported}
    try:
        return SinkSet.from_specs(specs, label=f"{spec.tenant}/{spec.name}")
    except PublisherError as exc:
        raise PlanDeployError(f"plan {spec.name}: {exc}") from None


def start_sources(spec, router):
    """Start the @source of every imported stream (http/zmq/file); returns them to stop later."""
    started = []
    try:
        for s in spec.imported:
            for src in s.specs:
                options = {"type": src["type"], **src.get("options", {})}
                started.append(build_source(options, router, stream_key(spec, s.stream)).start())
    except (ReceiverError, OSError) as exc:
        stop_all(started)
        raise PlanDeployError(f"plan {spec.name}: {exc}") from None
    return started


def stop_all(parts):
    """Stop sources, services or connections, logging (not raising) failures."""
    for part in parts:
        try:
            part.stop()
        except Exception:  # stopping must reach every part
            log.exception("stopping %r failed", part)
