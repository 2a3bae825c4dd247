"""Small record stores of the manager's security area: users, tenants and API tokens.

Each kind ("users", "tenants", "tokens") maps a string key to a JSON object. Files by default
(`<data>/security/<kind>.json`, mode 0600, written atomically under a lock), Redis hashes
`<prefix>:auth:<kind>` when the plan store is Redis."""

import json
import os
import tempfile
import threading
from pathlib import Path

import redis

from manager.exceptions import StoreError

KINDS = ("users", "tenants", "tokens")


class FileRecords:
    """Records in `<data>/security/<kind>.json` (0600; the folder 0700)."""

    def __init__(self, data_dir):
        self.root = Path(data_dir) / "security"
        self._lock = threading.RLock()
        self._cache = {}  # kind -> ((inode, mtime_ns, size), items): a stat, not a parse, per call
        self._paths = {kind: self.root / f"{kind}.json" for kind in KINDS}

    def _path(self, kind):
        if kind not in KINDS:
            raise StoreError(f"unknown record kind {kind!r}")
        return self._paths[kind]

    def _load(self, kind):
        """{key: record} as cached; re-read only when the file changed (inode, mtime, size)."""
        path = self._path(kind)
        try:
            st = os.stat(path)
            signature = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = self._cache.get(kind)
            if cached is not None and cached[0] == signature:
                return cached[1]
            with open(path, encoding="utf-8") as fh:
                items = json.load(fh)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read {path}: {exc}") from None
        self._cache[kind] = (signature, items)
        return items

    def all(self, kind):
        """{key: record} of one kind (copies: callers may change them)."""
        return {key: dict(record) for key, record in self._load(kind).items()}

    def get(self, kind, key):
        record = self._load(kind).get(key)
        return dict(record) if record is not None else None

    def put(self, kind, key, record):
        with self._lock:
            items = self.all(kind)
            items[key] = record
            self._write(kind, items)

    def delete(self, kind, key):
        """True if the key existed."""
        with self._lock:
            items = self.all(kind)
            if items.pop(key, None) is None:
                return False
            self._write(kind, items)
            return True

    def _write(self, kind, items):
        path = self._path(kind)
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".", suffix=".tmp")  # 0600
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(items, fh, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc}") from None

    def close(self):
        """Nothing to release."""


class RedisRecords:
    """Records in Redis hashes `<prefix>:auth:<kind>` (key -> JSON text)."""

    def __init__(self, url, prefix="cep"):
        self.url, self.prefix = url, prefix
        try:
            self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5)
        except ValueError as exc:
            raise StoreError(f"bad store.redis_url {url!r}: {exc}") from None

    def _key(self, kind):
        if kind not in KINDS:
            raise StoreError(f"unknown record kind {kind!r}")
        return f"{self.prefix}:auth:{kind}"

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except redis.RedisError as exc:
            raise StoreError(f"Redis store {self.url}: {exc}") from None

    def all(self, kind):
        raw = self._call(self.redis.hgetall, self._key(kind))
        return {k: json.loads(v) for k, v in raw.items()}

    def get(self, kind, key):
        raw = self._call(self.redis.hget, self._key(kind), key)
        return json.loads(raw) if raw is not None else None

    def put(self, kind, key, record):
        self._call(self.redis.hset, self._key(kind), key, json.dumps(record, sort_keys=True))

    def delete(self, kind, key):
        return bool(self._call(self.redis.hdel, self._key(kind), key))

    def close(self):
        self.redis.close()


def open_records(data_dir, redis_url=None, redis_prefix="cep"):
    """Redis records when `redis_url` is set, else files under `data_dir`."""
    if redis_url:
        return RedisRecords(redis_url, redis_prefix)
    return FileRecords(data_dir)
