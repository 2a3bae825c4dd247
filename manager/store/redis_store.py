"""Redis plan store: hash `<prefix>:plans:<tenantId>` maps plan name -> SiddhiQL text; the
plan versions are JSON at `<prefix>:deployment-versions`. In a manager group every
write goes through `fence` (manager.lease.FencedWriter): one Lua script that checks the
writer's fencing token first, so a paused old leader cannot overwrite the new leader's plans."""

import json

import redis

from manager.exceptions import StoreError
from manager.store.base import PlanStore, check_name, not_found, parse_tenant


class RedisStore(PlanStore):
    """Plans in Redis hashes, one per tenant; the set `<prefix>:tenants` lists the tenants."""

    def __init__(self, url, prefix="cep"):
        self.url = url
        self.prefix = prefix
        self.fence = None  # manager.lease.FencedWriter when the manager is in a group
        try:
            self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5)
        except ValueError as exc:
            raise StoreError(f"bad store.redis_url {url!r}: {exc}") from None

    def _key(self, tenant):
        return f"{self.prefix}:plans:{parse_tenant(tenant)}"

    def _call(self, what, fn, *args):
        try:
            return fn(*args)
        except redis.RedisError as exc:
            raise StoreError(f"Redis store {self.url}: cannot {what}: {exc}") from None

    def _write(self, what, ops):
        """Run write commands atomically: fenced in a group, else as one transaction."""
        if self.fence is not None:
            return self.fence.execute(ops)
        pipe = self.redis.pipeline()
        for op in ops:
            pipe.execute_command(*op)
        return self._call(what, pipe.execute)

    def save(self, tenant, name, text):
        check_name(name)
        self._write(
            f"save plan {name!r}",
            [
                ["HSET", self._key(tenant), name, text],
                ["SADD", f"{self.prefix}:tenants", str(parse_tenant(tenant))],
            ],
        )

    def load(self, tenant, name):
        text = self._call(
            f"load plan {name!r}", self.redis.hget, self._key(tenant), check_name(name)
        )
        if text is None:
            raise not_found(tenant, name)
        return text

    def delete(self, tenant, name):
        removed = self._write(
            f"delete plan {name!r}", [["HDEL", self._key(tenant), check_name(name)]]
        )
        if not removed[0]:
            raise not_found(tenant, name)

    def names(self, tenant):
        return sorted(self._call("list plans", self.redis.hkeys, self._key(tenant)))

    def tenants(self):
        members = self._call("list tenants", self.redis.smembers, f"{self.prefix}:tenants")
        return sorted(int(t) for t in members if self.names(int(t)))

    def load_versions(self):
        text = self._call(
            "load plan versions", self.redis.get, f"{self.prefix}:deployment-versions"
        )
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def save_versions(self, versions):
        self._write(
            "save plan versions",
            [["SET", f"{self.prefix}:deployment-versions", json.dumps(versions)]],
        )

    def close(self):
        self.redis.close()
