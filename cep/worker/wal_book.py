"""The worker's write-ahead logs: where each imported stream's log lives, its
receiver id, and the commit/replay calls a plan's receiver spouts (or the checkpoint
coordinator) make.

    <worker.data_dir>/wal/<tenant>/<plan>/<stream>/<offset>.wal
    (worker.data_dir empty: <worker.state_dir>/<worker id>/wal/...)

A receiver id is `<worker id>/<tenant>/<plan>/<stream>#<log id>`: stable across restarts of a
worker with a fixed id or HTTP port, so the offsets a checkpoint recorded still name this log;
the log id is made with the log, so a wiped log (offsets from 0 again) is a new receiver."""

import logging
import os
from urllib.parse import quote

from cep.worker.config import wal_dir
from cep.worker.exceptions import PlanDeployError
from receivers.wal import WriteAheadLog
from receivers.wal.exceptions import WalError

log = logging.getLogger(__name__)


class UnknownLogError(WalError):
    """A commit or replay names a stream or receiver id this worker does not log."""


def path_part(name):
    """A file-name-safe path part (plan and stream ids are user text)."""
    safe = quote(str(name), safe="-_.")
    return safe if safe not in ("", ".", "..") else quote(safe.replace(".", "%2E"))


class WalBook:
    """Opens the logs of a worker from its settings; None when wal.enabled is off."""

    def __init__(self, cfg):
        self.cfg, self.root = cfg, None
        self.control = None  # the worker URL spouts send commit/replay to

    def bind(self, worker_id, control):
        """The worker's id (the default folder) and URL, known once its HTTP port is bound."""
        self.root, self.control = wal_dir(self.cfg, worker_id), control

    @classmethod
    def from_config(cls, cfg):
        return cls(cfg) if cfg["wal.enabled"] else None

    def directory(self, tenant, plan, stream):
        return os.path.join(self.root, path_part(tenant), path_part(plan), path_part(stream))

    @staticmethod
    def receiver_id(worker_id, tenant, plan, stream, log_id):
        return f"{worker_id}/{tenant}/{plan}/{stream}#{log_id}"

    def open(self, tenant, plan, stream):
        c = self.cfg
        try:
            return WriteAheadLog(
                self.directory(tenant, plan, stream),
                c["wal.durability"],
                c["wal.segment_bytes"],
                c["wal.max_bytes"],
                c["wal.max_age_s"],
                name=f"{tenant}/{plan}/{stream}",
            ).open()
        except (OSError, WalError) as exc:
            raise PlanDeployError(
                f"plan {plan}: write-ahead log of stream {stream}: {exc}"
            ) from None


def find_connection(worker, tenant, plan, stream, receiver_id):
    """The LoggedSpoutConnection of a stream; UnknownLogError when there is none."""
    handle = None
    for (t, name), h in list(worker.plans.items()):
        if str(t) == str(tenant) and name == plan:
            handle = h
    conn = getattr(handle, "inflows", {}).get(stream) if handle is not None else None
    if conn is None or getattr(conn, "wal", None) is None:
        raise UnknownLogError(f"no write-ahead log for {tenant}/{plan}/{stream} on this worker")
    if receiver_id is not None and receiver_id != conn.receiver_id:
        raise UnknownLogError(
            f"receiver id {receiver_id!r} is not this worker's log of "
            f"{tenant}/{plan}/{stream} ({conn.receiver_id})"
        )
    return conn


def commit(worker, tenant, plan, stream, receiver_id, offset):
    """Events up to `offset` of that log are covered by a completed checkpoint: segments
    wholly at or below it are deleted. Returns the number of segments deleted."""
    return find_connection(worker, tenant, plan, stream, receiver_id).commit(int(offset))


def replay(worker, tenant, plan, stream, receiver_id, from_offset):
    """Re-send the logged events after `from_offset` to the plan's spout, in order, before
    new events. Returns {"first", "end", "events", "missing"}."""
    return find_connection(worker, tenant, plan, stream, receiver_id).replay(int(from_offset))
