"""The leader lease of a manager group in Redis, and the fencing token.

Managers sharing a `store.redis_url` form a group. Keys (prefix `store.redis_prefix`):

- `<prefix>:leader` = `"<manager id> <token>"`, set only when absent, with an expiry of
  `ha.lease_ttl` (PX); the holder renews it every third of the TTL.
- `<prefix>:leader:fence` = the newest fencing token, an INCR taken on every acquisition, so
  tokens only grow. Every write to the shared store runs as one Lua script that first checks
  this key equals the writer's token (`FencedWriter`): a leader paused past its lease (a GC
  pause, SIGSTOP) comes back with an older token and its writes are refused.
- `<prefix>:managers` = hash manager id -> JSON `{url, registry, role, seen}`, each member's
  own entry, rewritten every round (unfenced: a member writes only itself).

A manager restarted with the same id (the same data dir) takes its own lease back at once,
with a new token, instead of waiting for the lease of its previous process to expire."""

import json
import time

import redis

from manager.exceptions import FencedWriteError, StoreError

ACQUIRE = """
local held = redis.call('GET', KEYS[1])
if held and string.sub(held, 1, string.len(ARGV[1]) + 1) ~= ARGV[1] .. ' ' then
  return false
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. token, 'PX', ARGV[2])
return token
"""

RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

FENCED = """
local newest = redis.call('GET', KEYS[1])
if newest ~= ARGV[1] then
  return redis.error_reply('FENCED token ' .. ARGV[1] .. ' is not the newest (' ..
                           tostring(newest) .. ')')
end
local out = {}
for i, op in ipairs(cjson.decode(ARGV[2])) do
  out[i] = redis.call(unpack(op))
end
return out
"""


def connect(url):
    """A Redis client with short timeouts (a dead Redis must not stall the election)."""
    try:
        return redis.Redis.from_url(
            url, decode_responses=True, socket_timeout=2, socket_connect_timeout=2
        )
    except ValueError as exc:
        raise StoreError(f"bad store.redis_url {url!r}: {exc}") from None


class Lease:
    """The Redis operations of the lease; one instance per manager (`manager_id`)."""

    def __init__(self, client, prefix, manager_id, ttl):
        self.redis, self.id = client, manager_id
        self.ttl_ms = int(ttl * 1000)
        self.key, self.fence_key = f"{prefix}:leader", f"{prefix}:leader:fence"
        self.members_key = f"{prefix}:managers"
        self._acquire = client.register_script(ACQUIRE)
        self._renew = client.register_script(RENEW)
        self._release = client.register_script(RELEASE)
        self.token = None  # the token of the lease this manager holds, else None

    @property
    def value(self):
        return f"{self.id} {self.token}"

    def acquire(self):
        """Take the lease when it is free (or held by this manager's id); the new token, or
        None when another manager holds it."""
        token = self._acquire(keys=[self.key, self.fence_key], args=[self.id, self.ttl_ms])
        self.token = int(token) if token is not None else None
        return self.token

    def renew(self):
        """Extend the lease; False (and no token) when it is no longer ours."""
        if self.token is None:
            return False
        if not self._renew(keys=[self.key], args=[self.value, self.ttl_ms]):
            self.token = None
            return False
        return True

    def release(self):
        """Give the lease up (a clean stop), so a follower takes over at once."""
        if self.token is not None:
            self._release(keys=[self.key], args=[self.value])
        self.token = None

    def holder(self):
        """{"id", "token", "ttlMs"} of the current lease, or None when nobody holds it."""
        pipe = self.redis.pipeline()
        pipe.get(self.key)
        pipe.pttl(self.key)
        value, ttl = pipe.execute()
        if not value or " " not in value:
            return None
        holder, token = value.rsplit(" ", 1)
        return {"id": holder, "token": int(token), "ttlMs": ttl}

    def newest_token(self):
        value = self.redis.get(self.fence_key)
        return int(value) if value else 0

    def publish_member(self, info):
        """Write this manager's entry in the group list (url, registry, role, seen)."""
        self.redis.hset(self.members_key, self.id, json.dumps({**info, "seen": time.time()}))

    def members(self):
        """{manager id: entry} of every manager that ever published itself."""
        raw = self.redis.hgetall(self.members_key)
        out = {}
        for member, text in raw.items():
            try:
                out[member] = json.loads(text)
            except ValueError:
                continue
        return out

    def forget_member(self):
        self.redis.hdel(self.members_key, self.id)


class FencedWriter:
    """Runs a list of Redis commands atomically, only while `token()` is the newest token.

    `token` is a callable giving the writer's current fencing token (None: not the leader,
    every write refused). Raises FencedWriteError when refused, StoreError when Redis fails."""

    def __init__(self, client, prefix, token):
        self.fence_key = f"{prefix}:leader:fence"
        self.token = token
        self._script = client.register_script(FENCED)

    def execute(self, ops):
        """ops: [[command, *args], ...]; their results."""
        token = self.token()
        if token is None:
            raise FencedWriteError("this manager does not hold the leader lease: write refused")
        try:
            return self._script(keys=[self.fence_key], args=[token, json.dumps(ops)])
        except redis.ResponseError as exc:
            if "FENCED" in str(exc):
                raise FencedWriteError(f"write refused by fencing: {exc}") from None
            raise StoreError(f"Redis store: {exc}") from None
        except redis.RedisError as exc:
            raise StoreError(f"Redis store: {exc}") from None
