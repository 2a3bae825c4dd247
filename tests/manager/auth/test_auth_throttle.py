"""The failed-login throttle with a fake clock."""
from manager.auth.throttle import LoginThrottle


def test_throttle_counts_failures_in_a_window_and_forgets_on_success():
    now = [1000.0]
    t = LoginThrottle(limit=2, window=60.0, clock=lambda: now[0])
    t.failed("a")
    assert t.retry_after("a") == 0.0
    now[0] += 10
    t.failed("a")
    assert t.retry_after("a") == 50.0 and t.retry_after("b") == 0.0
    now[0] += 50.5
    assert t.retry_after("a") == 0.0  # the first failure aged out
    t.failed("a")
    t.succeeded("a")
    assert t.retry_after("a") == 0.0
