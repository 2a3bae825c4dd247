"""The checkpoint stores: atomic blobs with checksums, completion, keep K, plan keys."""

import os

import pytest

from topology.checkpoint.exceptions import CorruptCheckpointError
from topology.checkpoint.store import FileStore, RedisStore, decode, encode, plan_key


def test_blob_round_trip_and_any_flipped_byte_is_detected():
    state = {"engine": b"\x00\x01" * 500, "pending": [["Out", [[1, "a", 2.5]]]]}
    blob = encode(state)
    assert decode(blob, "x") == state
    for pos in (3, len(blob) // 2, len(blob) - 1):
        bad = bytearray(blob)
        bad[pos] ^= 0x40
        with pytest.raises(CorruptCheckpointError, match="x"):
            decode(bytes(bad), "x")
    with pytest.raises(CorruptCheckpointError, match="checksum"):
        decode(blob[:-5], "x")


def test_file_store_writes_atomically_and_completes_with_metadata_last(tmp_path):
    store = FileStore(tmp_path, "Plan[-1234]", "k1", keep=3)
    assert store.next_id() == 1
    store.write(1, 0, {"a": 1})
    store.write(1, 1, None)
    files = sorted(p.name for p in (store.base / "000000000001").iterdir())
    assert files == ["task-00000.ckpt", "task-00001.ckpt"]  # no temp files left
    assert store.completed() == []  # no metadata.json yet: not complete
    store.complete(1, {"tasks": 2})
    assert store.completed() == [1]
    assert store.read(1, 0) == {"a": 1} and store.read(1, 1) is None
    assert store.metadata(1)["tasks"] == 2
    assert store.next_id() == 2


def test_keep_k_deletes_older_and_unfinished_older_checkpoints(tmp_path):
    store = FileStore(tmp_path, "P", "k", keep=2)
    for cid in range(1, 6):
        store.write(cid, 0, cid)
        if cid != 4:
            store.complete(cid, {})
    # 4 never completed and is older than the newest kept: gone; 3 and 5 kept
    assert store.completed() == [3, 5]
    assert sorted(os.listdir(store.base)) == ["000000000003", "000000000005"]


def test_a_missing_or_damaged_file_names_checkpoint_and_task(tmp_path):
    store = FileStore(tmp_path, "P", "k")
    store.write(7, 2, [1, 2, 3])
    path = store.base / "000000000007" / "task-00002.ckpt"
    path.write_bytes(path.read_bytes()[:-1] + b"\xff")
    with pytest.raises(CorruptCheckpointError, match=r"7 task 2.*checksum"):
        store.read(7, 2)
    with pytest.raises(CorruptCheckpointError, match="task 3"):
        store.read(7, 3)


def test_plan_key_changes_with_the_queries_not_with_the_registry_address():
    def spec(queries, registry):
        return {
            "name": "P",
            "config": {},
            "components": [{"id": "b", "config": {"queries": queries, "registry": registry}}],
        }

    base = plan_key(spec("from S select a insert into O;", "tcp://h:1"))
    assert plan_key(spec("from S select a insert into O;", "tcp://h:2")) == base
    assert plan_key(spec("from S select b insert into O;", "tcp://h:1")) != base


def test_redis_store_same_contract(redis_url):
    store = RedisStore(redis_url, "Plan[-1]", "rk", keep=2)
    for cid in (1, 2, 3):
        store.write(cid, 0, {"cid": cid})
        store.write(cid, 1, b"bytes")
        store.complete(cid, {"n": cid})
    assert store.completed() == [2, 3]
    assert store.read(3, 0) == {"cid": 3} and store.read(3, 1) == b"bytes"
    assert store.next_id() == 4
    store.client.set(f"{store.prefix}:3:1", b"garbage")
    with pytest.raises(CorruptCheckpointError, match="3 task 1"):
        store.read(3, 1)
    other = RedisStore(redis_url, "Plan[-1]", "rk2")
    assert other.other_keys() == ["rk"] and store.other_keys() == []
    store.discard(2)
    store.discard(3)
    assert store.completed() == []


def test_a_write_that_fails_midway_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    from topology.checkpoint import store as store_module
    from topology.checkpoint.exceptions import CheckpointError

    store = FileStore(tmp_path, "P", "k")
    store.write(1, 0, {"v": "old"})

    def crash(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_module.os, "fsync", crash)
    with pytest.raises(CheckpointError, match="cannot write task-00000.ckpt"):
        store.write(1, 0, {"v": "new" * 1000})
    monkeypatch.undo()
    assert store.read(1, 0) == {"v": "old"}  # readers never see a partial file
    assert os.listdir(store.base / "000000000001") == ["task-00000.ckpt"]  # no temp left


def test_a_redis_store_that_is_down_raises_checkpoint_errors_only():
    """The coordinator survives a redis-server restart (fault test 8): every store call
    raises CheckpointError, never a redis exception that would end the driver."""
    from tests.conftest import free_port
    from topology.checkpoint.exceptions import CheckpointError

    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", "Plan[-1]", "down")
    calls = [
        lambda: store.write(1, 0, {"a": 1}),
        lambda: store.complete(1, {}),
        store.completed,
        lambda: store.discard(1),
        store.next_id,
        store.prune,
        lambda: store.read(1, 0),
    ]
    for call in calls:
        with pytest.raises(CheckpointError):
            call()
