"""Issue 13: the leader lease and the fencing token, against a real redis-server (fast)."""

import threading
import time

import pytest
import redis

from manager.exceptions import FencedWriteError
from manager.leader import ManagerGroup
from manager.lease import FencedWriter, Lease, connect
from manager.store import RedisStore
from tests.manager.manager_helpers import poll

PREFIX = "hatest"


def lease(url, member, ttl=1.0):
    return Lease(connect(url), PREFIX, member, ttl)


def test_one_holder_at_a_time_and_tokens_only_grow(redis_db):
    a, b = lease(redis_db, "a"), lease(redis_db, "b")
    assert a.acquire() == 1
    assert b.acquire() is None  # held by a
    assert a.holder()["id"] == "a" and a.holder()["token"] == 1
    assert a.renew() and not b.renew()
    time.sleep(1.2)  # a stops renewing: the lease expires
    assert a.holder() is None
    assert b.acquire() == 2  # a new, larger token
    assert not a.renew() and a.token is None  # a finds out at its next renewal
    assert b.newest_token() == 2


def test_a_restarted_manager_takes_its_own_lease_back_with_a_new_token(redis_db):
    first, again, other = (
        lease(redis_db, "m1", 30),
        lease(redis_db, "m1", 30),
        lease(redis_db, "m2", 30),
    )
    assert first.acquire() == 1
    assert other.acquire() is None
    assert again.acquire() == 2  # same id (same data dir): no wait for the old lease
    assert not first.renew()  # the old process's token is gone


def test_release_lets_another_manager_take_over_at_once(redis_db):
    a, b = lease(redis_db, "a", 30), lease(redis_db, "b", 30)
    a.acquire()
    a.release()
    assert b.acquire() == 2


def test_fenced_writes_with_an_old_token_are_refused(redis_db):
    a, b = lease(redis_db, "a"), lease(redis_db, "b")
    client = connect(redis_db)
    old = a.acquire()
    writer_a = FencedWriter(client, PREFIX, lambda: old)  # a paused leader keeps its token
    assert writer_a.execute([["SET", "hatest:k", "from-a"]]) == ["OK"]
    time.sleep(1.2)
    new = b.acquire()
    writer_b = FencedWriter(client, PREFIX, lambda: new)
    with pytest.raises(FencedWriteError, match="not the newest"):
        writer_a.execute([["SET", "hatest:k", "late-a"], ["SET", "hatest:other", "x"]])
    assert client.get("hatest:k") == "from-a" and client.get("hatest:other") is None  # nothing
    writer_b.execute([["SET", "hatest:k", "from-b"]])
    assert client.get("hatest:k") == "from-b"
    with pytest.raises(FencedWriteError, match="does not hold"):
        FencedWriter(client, PREFIX, lambda: None).execute([["SET", "hatest:k", "x"]])


def test_the_redis_plan_store_refuses_a_fenced_out_writer(redis_db):
    a, b = lease(redis_db, "a"), lease(redis_db, "b")
    token_a = a.acquire()
    store_a, store_b = RedisStore(redis_db, PREFIX), RedisStore(redis_db, PREFIX)
    store_a.fence = FencedWriter(store_a.redis, PREFIX, lambda: token_a)
    store_a.save(-1234, "P", "text 1")
    store_a.save_versions({"version": 1, "plans": {"-1234/P": 1}})
    time.sleep(1.2)
    token_b = b.acquire()
    store_b.fence = FencedWriter(store_b.redis, PREFIX, lambda: token_b)
    for write in (
        lambda: store_a.save(-1234, "P", "stale"),
        lambda: store_a.delete(-1234, "P"),
        lambda: store_a.save_versions({"version": 9}),
    ):
        with pytest.raises(FencedWriteError):
            write()
    assert store_b.load(-1234, "P") == "text 1" and store_b.load_versions()["version"] == 1
    store_b.save(-1234, "P", "text 2")
    store_b.delete(-1234, "P")
    assert not store_b.exists(-1234, "P")


class Calls:
    def __init__(self):
        self.promoted, self.demoted, self.follows = [], 0, 0

    def group(self, url, member, ttl=1.0):
        return ManagerGroup(
            url, PREFIX, member, ttl, self.promoted.append, self.demote, self.follow
        )

    def demote(self):
        self.demoted += 1

    def follow(self):
        self.follows += 1


def test_a_follower_takes_over_from_a_leader_that_stops_renewing(redis_db):
    ca, cb = Calls(), Calls()
    a = ca.group(redis_db, "a").start()
    b = cb.group(redis_db, "b").start()
    try:
        assert a.role == "leader" and b.role == "follower" and ca.promoted == [1]
        poll(lambda: cb.follows >= 2, timeout=5, what="follower rounds")
        assert not b.is_leader() and a.is_leader()
        a._stop.set()  # a "pauses": it renews no more (its thread ends)
        a._thread.join()
        started = time.monotonic()
        poll(lambda: b.role == "leader", timeout=60, what="take-over")
        print(f"take-over after {time.monotonic() - started:.2f} s (ttl 1 s + a round)")
        assert cb.promoted == [2] and not a.is_leader()  # a's own clock says its lease is over
        a.round()  # a resumes: its renewal fails, it steps down
        assert a.role == "follower" and ca.demoted == 1
        desc = b.describe()
        assert desc["leaseHolder"] == "b" and desc["fencingToken"] == 2 and desc["role"] == "leader"
        assert 0 <= desc["leaseAgeSec"] <= 1.0
    finally:
        a.stop()
        b.stop()


def test_a_leader_whose_redis_goes_away_steps_down_after_its_ttl(redis_db, monkeypatch):
    calls = Calls()
    g = calls.group(redis_db, "a").start()
    try:
        assert g.role == "leader"
        g._stop.set()
        g._thread.join()

        def down(*args, **kwargs):
            raise redis.ConnectionError("Redis went away")

        monkeypatch.setattr(g.lease, "renew", down)
        g.round()  # within the TTL: still the leader
        assert g.role == "leader"
        time.sleep(1.05)
        g.round()
        assert g.role == "follower" and calls.demoted == 1 and "went away" in g.last_error
    finally:
        monkeypatch.undo()
        g.stop()


def test_only_one_of_many_contenders_leads(redis_db):
    calls = [Calls() for _ in range(5)]
    groups = [c.group(redis_db, f"m{i}", ttl=5) for i, c in enumerate(calls)]
    threads = [threading.Thread(target=g.round) for g in groups]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(g.role == "leader" for g in groups) == 1
    for g in groups:
        g.client.close()


def test_bad_settings_and_a_redis_that_is_not_there_are_clear(tmp_path):
    from manager.exceptions import ManagerError
    from tests.manager.manager_helpers import free_port

    calls = Calls()
    with pytest.raises(ManagerError, match="at least 1 s"):
        calls.group("redis://127.0.0.1:1/0", "a", ttl=0.5)
    g = calls.group(f"redis://127.0.0.1:{free_port()}/0", "a").start()  # nothing listens
    try:
        assert g.role == "follower" and "Redis" in g.last_error and not g.is_leader()
        assert g.describe()["leaseHolder"] is None and g.leader_url() is None
    finally:
        g.stop()
