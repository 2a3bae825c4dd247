"""The failed-login throttle with a fake clock: per address and per user, with backoff, and
never a refusal for an address that has not failed."""

from manager.auth.throttle import LoginThrottle


def make(**kw):
    now = [1000.0]
    return LoginThrottle(clock=lambda: now[0], **kw), now


def test_an_address_spraying_wrong_passwords_locks_only_itself_with_backoff():
    t, now = make(addr_limit=3, user_limit=100, window=300.0, base=1.0)
    for _ in range(3):
        t.failed("admin", "6.6.6.6")
    assert t.retry_after("admin", "6.6.6.6") == (1.0, True)  # locked, reported once
    assert t.retry_after("admin", "6.6.6.6") == (1.0, False)
    assert t.retry_after("admin", "10.0.0.1") == (0.0, False)  # the real admin elsewhere
    t.failed("admin", "6.6.6.6")
    assert t.retry_after("admin", "6.6.6.6")[0] == 2.0  # backoff doubles
    t.failed("admin", "6.6.6.6")
    assert t.retry_after("admin", "6.6.6.6")[0] == 4.0
    now[0] += 4.0
    assert t.retry_after("admin", "6.6.6.6") == (0.0, False)  # the wait passed: one try
    for _ in range(30):
        t.failed("admin", "6.6.6.6")
    assert t.retry_after("admin", "6.6.6.6")[0] == 300.0  # capped at the window


def test_many_addresses_failing_one_name_wait_but_a_clean_address_gets_in():
    t, now = make(addr_limit=100, user_limit=5, window=300.0, base=1.0)
    for i in range(6):
        t.failed("admin", f"6.6.6.{i}")
    assert t.retry_after("admin", "6.6.6.0")[0] > 0  # the name is under attack: failers wait
    assert t.retry_after("admin", "6.6.6.9")[0] == 0.0  # an address that never failed
    assert t.retry_after("ann", "6.6.6.0")[0] == 0.0  # another name from a failing address


def test_success_forgets_the_address_and_failures_age_out():
    t, now = make(addr_limit=2, user_limit=100, window=60.0, base=1.0)
    t.failed("a", "1.1.1.1")
    t.failed("a", "1.1.1.1")
    assert t.retry_after("a", "1.1.1.1")[0] == 1.0
    t.succeeded("a", "1.1.1.1")
    assert t.retry_after("a", "1.1.1.1")[0] == 0.0
    t.failed("a", "1.1.1.1")
    t.failed("a", "1.1.1.1")
    now[0] += 61
    assert t.retry_after("a", "1.1.1.1")[0] == 0.0  # aged out of the window
