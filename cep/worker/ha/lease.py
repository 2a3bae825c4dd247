"""Who is active, decided by a lease in Redis (when ha.redis_url is set): the holder is active.

`hold()` takes the lease when it is free or renews it when it is ours (one Lua script, so a
node never renews a lease another node took meanwhile), with a time to live of ha.failover_s.
The active calls it at every heartbeat; the passive only when the active has gone silent.
Redis errors become LeaseError: the caller then falls back to the pair's own protocol (the
active stays active and keeps publishing; see README "2-node HA")."""

import logging

from cep.worker.ha.exceptions import LeaseError

log = logging.getLogger(__name__)

_HOLD = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2]) return 1
end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class RedisLease:
    """The pair's lease at `url` under `key`, held by node id `node`."""

    def __init__(self, url, key, node, ttl_s):
        import redis

        self.url, self.key, self.node, self.ttl_ms = url, key, node, int(ttl_s * 1000)
        self._errors = (redis.RedisError, OSError)
        self._redis = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self.last_error = None
        self.held = False

    def hold(self):
        """True when this node holds the lease now; False when another node does."""
        try:
            self.held = bool(self._redis.eval(_HOLD, 1, self.key, self.node, self.ttl_ms))
        except self._errors as exc:
            self.held = False
            self._fail(exc)
        self.last_error = None
        return self.held

    def holder(self):
        try:
            value = self._redis.get(self.key)
        except self._errors as exc:
            self._fail(exc)
        return value.decode() if value else None

    def release(self):
        try:
            self._redis.eval(_RELEASE, 1, self.key, self.node)
        except self._errors as exc:
            log.warning("could not release the HA lease at %s: %s", self.url, exc)

    def _fail(self, exc):
        message = f"Redis lease at {_safe(self.url)} ({self.key}): {type(exc).__name__}: {exc}"
        if message != self.last_error:
            log.warning("%s; the pair's own protocol decides meanwhile", message)
        self.last_error = message
        raise LeaseError(message) from None

    def describe(self):
        return {
            "url": _safe(self.url),
            "key": self.key,
            "held": self.held,
            "last_error": self.last_error,
        }


def _safe(url):
    """The URL without a password."""
    if "@" in url:
        scheme, rest = url.split("://", 1) if "://" in url else ("", url)
        return f"{scheme}://***@{rest.split('@', 1)[1]}"
    return url
