"""Issue 10: the users/tenants/tokens area of the manager's store, on files (0600, atomic) and
on a real Redis server, and the manager using it when its plan store is Redis."""

import json
import os

import pytest

from manager.auth.tokens import Tokens
from manager.auth.users import Directory
from manager.exceptions import StoreError
from manager.server import Manager
from manager.settings import load_manager_settings
from manager.store.records import FileRecords, RedisRecords, open_records
from manager.web import create_app
from tests.auth_helpers import ADMIN_PASSWORD
from tests.manager.manager_fakes import FakeLauncher


def exercise(records):
    directory, tokens = Directory(records), Tokens(records)
    directory.ensure_super_tenant()
    directory.add_tenant(3, "three")
    user = directory.add_user("bob", "bob's password", 3, "tenant-admin")
    assert user == {"name": "bob", "tenant": 3, "role": "tenant-admin", "created": user["created"]}
    assert directory.authenticate("bob", "bob's password")["role"] == "tenant-admin"
    assert directory.authenticate("bob", "wrong password") is None
    assert directory.authenticate("nobody", "bob's password") is None
    token, meta = tokens.create("bob", "ci")
    assert tokens.resolve(token) == "bob" and tokens.resolve(token + "x") is None
    assert [t["id"] for t in tokens.list("bob")] == [meta["id"]]
    tokens.revoke(meta["id"])
    assert tokens.resolve(token) is None
    directory.remove_user("bob")
    assert [t["id"] for t in directory.tenants()] == [-1234, 3]
    assert directory.users() == []


def test_file_records(tmp_path):
    records = open_records(tmp_path)
    assert isinstance(records, FileRecords)
    exercise(records)
    for kind in ("users", "tenants", "tokens"):
        path = tmp_path / "security" / f"{kind}.json"
        assert os.stat(path).st_mode & 0o777 == 0o600
        json.loads(path.read_text())
    assert os.stat(tmp_path / "security").st_mode & 0o777 == 0o700
    assert not [p for p in (tmp_path / "security").iterdir() if p.name.endswith(".tmp")]


def test_a_corrupt_file_is_a_store_error(tmp_path):
    records = FileRecords(tmp_path)
    (tmp_path / "security").mkdir()
    (tmp_path / "security" / "users.json").write_text("{not json")
    with pytest.raises(StoreError):
        records.all("users")


def test_redis_records_on_a_real_server(redis_db):
    records = open_records("/nonexistent", redis_db, "t1")
    assert isinstance(records, RedisRecords)
    exercise(records)
    again = RedisRecords(redis_db, "t1")  # another manager's view: same data
    assert [t["id"] for t in Directory(again).tenants()] == [-1234, 3]
    records.close()
    again.close()


def test_manager_with_a_redis_store_keeps_users_in_redis(tmp_path, redis_db):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "store.redis_url": redis_db,
            "store.redis_prefix": "t2",
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    try:
        client = create_app({"MANAGER": m}).test_client()
        resp = client.post("/api/v1/login", json={"user": "admin", "password": ADMIN_PASSWORD})
        assert resp.status_code == 201
        assert not (tmp_path / "security" / "users.json").exists()
        assert "admin" in RedisRecords(redis_db, "t2").all("users")
    finally:
        m.stop()
