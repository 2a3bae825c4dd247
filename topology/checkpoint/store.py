"""Checkpoint stores: one checksummed, compressed blob per instance and checkpoint.

Layout of the filesystem store (the default)::

    <root>/<topology>/<plan key>/<id:012d>/task-00003.ckpt    one per instance
    <root>/<topology>/<plan key>/<id:012d>/metadata.json      written last: "complete"

A blob is ``MAGIC, crc32(body), len(body), body`` with ``body = zlib(msgpack(state))``; it is
written to a temporary name, fsynced and renamed, so a reader sees a whole file or none. The
plan key is a hash of the topology's structure and component configs (its queries): a plan
edit gets a fresh directory, i.e. fresh state. On a cluster, ``root`` must be a path every
node shares (NFS...) or the Redis store (``checkpoint.redis_url``) must be used.
"""

import hashlib
import json
import os
import re
import shutil
import struct
import time
import zlib
from pathlib import Path

import msgpack

from topology.checkpoint.exceptions import CheckpointError, CorruptCheckpointError

MAGIC = b"CEPCKPT1"
_HEAD = struct.Struct(">IQ")
# config keys that change between deploys of the same plan without changing its meaning
VOLATILE_KEYS = frozenset({"registry", "host", "bind_host", "security", "heartbeat_interval"})


def pack(state):
    """msgpack of a state: the copy taken in the task thread (the engine's part is bytes
    already), after which the component may change its state freely."""
    return msgpack.packb(state, use_bin_type=True)


def seal(packed):
    """The blob of packed state: compressed and checksummed (done off the task thread)."""
    body = zlib.compress(packed, 1)
    return MAGIC + _HEAD.pack(zlib.crc32(body), len(body)) + body


def encode(state):
    """The blob of one instance's state (any msgpack-able value)."""
    return seal(pack(state))


def decode(blob, where):
    """The state in a blob; CorruptCheckpointError naming ``where`` when it does not check."""
    head = len(MAGIC) + _HEAD.size
    if len(blob) < head or not blob.startswith(MAGIC):
        raise CorruptCheckpointError(f"checkpoint {where}: not a checkpoint blob (bad header)")
    crc, size = _HEAD.unpack_from(blob, len(MAGIC))
    body = blob[head:]
    if len(body) != size or zlib.crc32(body) != crc:
        raise CorruptCheckpointError(
            f"checkpoint {where}: checksum mismatch (length "
            f"{len(body)} of {size}); the file is damaged"
        )
    try:
        return msgpack.unpackb(zlib.decompress(body), raw=False, strict_map_key=False)
    except (zlib.error, ValueError) as exc:
        raise CorruptCheckpointError(f"checkpoint {where}: does not decode: {exc}") from None


def plan_key(spec):
    """16 hex digits identifying a topology's plan (structure + component configs, without
    the deploy-specific keys); ``config["checkpoint_key"]`` overrides it."""
    given = (spec.get("config") or {}).get("checkpoint_key")
    if given:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", str(given))[:64]
    parts = []
    for comp in spec.get("components", []):
        comp = dict(comp)
        comp["config"] = {
            k: v for k, v in (comp.get("config") or {}).items() if k not in VOLATILE_KEYS
        }
        parts.append(comp)
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def safe_name(name):
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:80]}-{zlib.crc32(name.encode()):08x}"


class FileStore:
    """Checkpoints of one topology plan under ``root`` (a local or shared directory)."""

    kind = "file"

    def __init__(self, root, name, key, keep=3):
        self.base = Path(root) / safe_name(name) / key
        self.keep = max(1, int(keep))
        self.location = str(self.base)

    def _dir(self, cid):
        return self.base / f"{int(cid):012d}"

    def write(self, cid, task, state):
        """Store one instance's state for checkpoint ``cid``; returns its size in bytes."""
        return self.write_blob(cid, task, encode(state))

    def write_blob(self, cid, task, blob):
        """Store a sealed blob (``seal(pack(state))``); returns its size in bytes."""
        path = self._dir(cid) / f"task-{int(task):05d}.ckpt"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, blob)
        except OSError as exc:
            raise CheckpointError(f"checkpoint {cid}: cannot write {path.name}: {exc}") from None
        return len(blob)

    def read(self, cid, task):
        path = self._dir(cid) / f"task-{int(task):05d}.ckpt"
        try:
            blob = path.read_bytes()
        except OSError as exc:
            raise CorruptCheckpointError(
                f"checkpoint {cid}: task {task}: cannot read {path.name}: {exc.strerror}"
            ) from None
        return decode(blob, f"{cid} task {task} ({path.name})")

    def complete(self, cid, meta):
        """Write metadata.json (last, atomically), then delete all but the last K."""
        path = self._dir(cid) / "metadata.json"
        _atomic_write(path, json.dumps(dict(meta, id=cid, completed=time.time())).encode())
        self.prune()

    def completed(self):
        """Ids of complete checkpoints, oldest first."""
        return [cid for cid in self._ids() if (self._dir(cid) / "metadata.json").exists()]

    def metadata(self, cid):
        try:
            return json.loads((self._dir(cid) / "metadata.json").read_text())
        except (OSError, ValueError) as exc:
            raise CorruptCheckpointError(f"checkpoint {cid}: metadata.json: {exc}") from None

    def next_id(self):
        ids = self._ids()
        return (ids[-1] + 1) if ids else 1

    def discard(self, cid):
        shutil.rmtree(self._dir(cid), ignore_errors=True)

    def other_keys(self):
        """Plan keys of this topology other than ours (earlier versions of the plan)."""
        try:
            return sorted(n for n in os.listdir(self.base.parent) if n != self.base.name)
        except OSError:
            return []

    def prune(self):
        """Keep the last K complete checkpoints; drop older ones and unfinished ones older
        than the newest complete one."""
        done = self.completed()
        kept, newest = set(done[-self.keep :]), (done[-1] if done else 0)
        for cid in self._ids():  # unfinished ones older than the newest never complete
            if cid not in kept and (cid in done or cid < newest):
                self.discard(cid)

    def _ids(self):
        try:
            names = os.listdir(self.base)
        except OSError:
            return []
        return sorted(int(n) for n in names if n.isdigit())


def _atomic_write(path, data):
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class RedisStore:
    """The same checkpoints in Redis: ``<prefix>:<id>:<task>`` blobs, ``<prefix>:<id>:meta``
    and the sorted set ``<prefix>:ids`` (score = id) of every started checkpoint."""

    kind = "redis"

    def __init__(self, url, name, key, keep=3):
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=10)
        self.prefix = f"cep:ckpt:{safe_name(name)}:{key}"
        self.keep = max(1, int(keep))
        self.location = f"{url.split('@')[-1]} {self.prefix}"

    def _call(self, what, fn, *args):
        import redis

        try:
            return fn(*args)
        except redis.RedisError as exc:
            raise CheckpointError(f"checkpoint store (Redis) {what}: {exc}") from None

    def write(self, cid, task, state):
        return self.write_blob(cid, task, encode(state))

    def write_blob(self, cid, task, blob):
        pipe = self.client.pipeline()
        pipe.zadd(f"{self.prefix}:ids", {str(cid): cid})
        pipe.set(f"{self.prefix}:{cid}:{task}", blob)
        self._call(f"write {cid}/{task}", pipe.execute)
        return len(blob)

    def read(self, cid, task):
        blob = self._call(f"read {cid}/{task}", self.client.get, f"{self.prefix}:{cid}:{task}")
        if blob is None:
            raise CorruptCheckpointError(f"checkpoint {cid}: task {task}: missing in Redis")
        return decode(blob, f"{cid} task {task} (Redis)")

    def complete(self, cid, meta):
        data = json.dumps(dict(meta, id=cid, completed=time.time()))
        self._call(f"complete {cid}", self.client.set, f"{self.prefix}:{cid}:meta", data)
        self.prune()

    def _ids(self):
        raw = self._call("list", self.client.zrange, f"{self.prefix}:ids", 0, -1)
        return sorted(int(x) for x in raw)

    def completed(self):
        ids = self._ids()
        if not ids:
            return []
        flags = self._call("list", self.client.mget, [f"{self.prefix}:{i}:meta" for i in ids])
        return [cid for cid, meta in zip(ids, flags) if meta is not None]

    def metadata(self, cid):
        raw = self._call(f"metadata {cid}", self.client.get, f"{self.prefix}:{cid}:meta")
        try:
            return json.loads(raw)
        except (TypeError, ValueError) as exc:
            raise CorruptCheckpointError(f"checkpoint {cid}: metadata: {exc}") from None

    def next_id(self):
        ids = self._ids()
        return (ids[-1] + 1) if ids else 1

    def other_keys(self):
        head = self.prefix.rsplit(":", 1)[0]
        raw = self._call("list", lambda: list(self.client.scan_iter(f"{head}:*:ids")))
        keys = {k.decode().rsplit(":", 2)[-2] for k in raw}
        return sorted(keys - {self.prefix.rsplit(":", 1)[1]})

    def discard(self, cid):
        keys = self._call(
            f"discard {cid}", lambda: list(self.client.scan_iter(f"{self.prefix}:{cid}:*"))
        )
        pipe = self.client.pipeline()
        if keys:
            pipe.delete(*keys)
        pipe.zrem(f"{self.prefix}:ids", str(cid))
        self._call(f"discard {cid}", pipe.execute)

    def prune(self):
        done = self.completed()
        kept, newest = set(done[-self.keep :]), (done[-1] if done else 0)
        for cid in self._ids():  # unfinished ones older than the newest never complete
            if cid not in kept and (cid in done or cid < newest):
                self.discard(cid)


def open_store(options):
    """The store an options dict names: {"redis_url" or "dir", "name", "key", "keep"}."""
    if options.get("redis_url"):
        return RedisStore(
            options["redis_url"], options["name"], options["key"], options.get("keep", 3)
        )
    return FileStore(options["dir"], options["name"], options["key"], options.get("keep", 3))
