"""Plan stores: the SiddhiQL text of every execution plan, per tenant (files or Redis)."""

from manager.store.base import PlanStore, SUPER_TENANT, parse_tenant
from manager.store.files import FileStore
from manager.store.redis_store import RedisStore


def open_store(data_dir, redis_url=None, redis_prefix="cep"):
    """The Redis store when `redis_url` is set, else the file store under `data_dir`."""
    if redis_url:
        return RedisStore(redis_url, redis_prefix)
    return FileStore(data_dir)


__all__ = ["PlanStore", "FileStore", "RedisStore", "open_store", "SUPER_TENANT", "parse_tenant"]
