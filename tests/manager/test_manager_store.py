"""Plan stores: the file layout of CEP 4.0 per tenant, and a real redis-server."""

import pytest

from manager.exceptions import BadTenantError, PlanNotFoundError, StoreError
from manager.store import FileStore, RedisStore, open_store

TEXT = "@Plan:name('P')\ndefine stream S (a int);\n"


def exercise(store):
    store.save(-1234, "P", TEXT)
    store.save(-1234, "Q", "q")
    store.save(7, "P", "other tenant")
    assert store.load(-1234, "P") == TEXT
    assert store.load("7", "P") == "other tenant"
    assert store.names(-1234) == ["P", "Q"]
    assert store.tenants() == [-1234, 7]
    store.save(-1234, "P", TEXT + "-- edited\n")
    assert store.load(-1234, "P").endswith("-- edited\n")
    store.delete(-1234, "Q")
    assert store.names(-1234) == ["P"]
    with pytest.raises(PlanNotFoundError):
        store.load(-1234, "Q")
    with pytest.raises(PlanNotFoundError):
        store.delete(-1234, "Q")
    store.delete(7, "P")
    assert store.tenants() == [-1234]
    with pytest.raises(BadTenantError):
        store.load("super", "P")
    with pytest.raises(StoreError):
        store.save(-1234, "../evil", "x")
    assert [(t, n) for t, n, _ in store.all()] == [(-1234, "P")]


def test_file_store_layout(tmp_path):
    store = FileStore(tmp_path)
    exercise(store)
    path = tmp_path / "tenants" / "-1234" / "executionplans" / "P.siddhiql"
    assert path.read_text().startswith("@Plan:name('P')")
    assert not list(path.parent.glob(".*.tmp"))


@pytest.mark.slow
def test_redis_store_on_real_server(redis_db):
    store = open_store("/nonexistent", redis_url=redis_db)
    assert isinstance(store, RedisStore)
    exercise(store)
    again = RedisStore(redis_db)  # another process's view: same data
    assert again.load(-1234, "P") == TEXT + "-- edited\n"
    store.close()
    again.close()


def test_redis_store_unreachable_is_store_error():
    from tests.manager.manager_helpers import free_port

    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(StoreError, match="cannot load plan"):
        store.load(-1234, "P")
