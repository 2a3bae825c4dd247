"""Unit tests of the pair's output numbering and queue, the dual-send alignment after a state
sync, and the role rules (cep/worker/ha/outputs.py, plan.past, election.decide)."""

import types

import pytest

from cep.worker.ha.election import decide
from cep.worker.ha.outputs import OutputLedger
from cep.worker.ha.plan import past


def ev(*vals):
    return [(v, (f"k{v}",)) for v in vals]


def test_the_passive_queues_numbered_outputs_and_trims_what_the_active_published():
    written = []
    led = OutputLedger(["Out"], max_events=100)
    led.emit("Out", ev(1, 2, 3), lambda s, e: written.append(e), active=False)
    led.emit("Out", ev(4, 5), lambda s, e: written.append(e), active=False)
    assert written == [] and led.seq["Out"] == 5 and led.queued == 5
    led.trim({"Out": 4})  # cuts into the second batch
    assert led.queued == 1
    led.promote(lambda s, e: written.append(e), dup_before=float("-inf"))
    assert written == [ev(5)] and led.republished == 1 and led.duplicates == 0
    assert led.published["Out"] == 5
    led.emit("Out", ev(6), lambda s, e: written.append(e), active=True)
    assert written[-1] == ev(6) and led.published["Out"] == 6


def test_outputs_queued_before_the_active_was_last_heard_count_as_duplicates():
    led = OutputLedger(["Out"], max_events=100)
    led.emit("Out", ev(1, 2), lambda s, e: None, active=False)
    led.promote(lambda s, e: None, dup_before=float("inf"))
    assert led.duplicates == 2 and led.republished == 2


def test_a_full_queue_drops_the_oldest_and_counts_them():
    led = OutputLedger(["Out"], max_events=4)
    for v in range(3):
        led.emit("Out", ev(2 * v, 2 * v + 1), lambda s, e: None, active=False)
    assert led.queued == 4 and led.overflow == 2


def test_reset_takes_the_active_sequences():
    led = OutputLedger(["Out", "Big"], max_events=10)
    led.emit("Out", ev(1), lambda s, e: None, active=False)
    led.reset({"Out": 40, "Big": 3}, {"Out": 38, "Big": 3})
    assert led.seq == {"Out": 40, "Big": 3} and led.queued == 0
    assert led.peer_published["Out"] == 38


def test_dual_send_alignment_drops_what_the_snapshot_covers():
    last = (3, ("k3",))
    assert past(ev(1, 2, 3, 4), last) == (ev(4), True)  # cut after the matching event
    assert past(ev(1, 2), last) == ([], False)  # all covered; still waiting
    assert past(ev(5, 6), last) == (ev(5, 6), True)  # the match was never received
    assert past([(3, ("other",)), (3, ("k3",)), (3, ("x",))], last) == ([(3, ("x",))], True)


def test_a_passive_drops_covered_input_that_arrives_after_its_sync():
    """The snapshot's last event may reach the passive after the sync ended (the client posts
    to the active first): the catch-up keeps dropping until it has passed it."""
    from types import SimpleNamespace
    from cep.worker.ha.plan import HaPlan

    plan = SimpleNamespace(catch_up={"S": (3, ("k3",))}, dup_inputs=0)
    assert HaPlan._catching_up(plan, "S", ev(1, 2)) == []
    assert plan.catch_up and plan.dup_inputs == 2
    assert HaPlan._catching_up(plan, "S", ev(3, 4, 5)) == ev(4, 5)
    assert plan.catch_up == {} and plan.dup_inputs == 3


def node(role, node_id="a", epoch=0, started=0.0, lease=None, peer=None):
    """A stand-in HaNode for the rules; `peer` = (role, epoch, heard, active_heard)."""
    p_role, p_epoch, heard, active_heard = peer or (None, 0, None, None)
    p = types.SimpleNamespace(
        node="b", role=p_role, epoch=p_epoch, heard=heard, active_heard=active_heard
    )
    return types.SimpleNamespace(
        role=role,
        node_id=node_id,
        epoch=epoch,
        started=started,
        failover_s=5.0,
        lease=lease,
        peer=p,
    )


@pytest.mark.parametrize(
    "n, now, want",
    [
        (node("starting", "a"), 1.0, None),
        (node("starting", "a", peer=("starting", 0, 0.9, None)), 1.0, "activate"),  # a < b
        (node("starting", "c", peer=("starting", 0, 0.9, None)), 1.0, None),
        (node("starting", "c", peer=("active", 1, 0.9, 0.9)), 1.0, "sync"),
        (node("starting", "a"), 5.5, "activate"),  # no peer for failover_s: alone
        (node("passive", "a", peer=("active", 1, 9.0, 9.0)), 10.0, None),
        (node("passive", "a", peer=("active", 1, 4.0, 4.0)), 10.0, "activate"),
        (node("passive", "c", peer=("passive", 0, 9.9, 1.0)), 10.0, None),  # b takes over
        (node("passive", "a", peer=("stopped", 1, 9.9, 9.0)), 10.0, "activate"),  # handed over
        (node("active", "c", epoch=2, peer=("active", 1, 9.9, 9.9)), 10.0, None),
        (node("active", "c", epoch=1, peer=("active", 1, 9.9, 9.9)), 10.0, "demote"),
        (node("active", "a", epoch=1, peer=("active", 1, 9.9, 9.9)), 10.0, None),
        (node("active", "a", epoch=1, peer=("active", 2, 9.9, 9.9)), 10.0, "demote"),
    ],
)
def test_role_rules(n, now, want):
    got = decide(n, now)
    assert (got[0] if got else None) == want


def test_a_lease_held_elsewhere_keeps_the_passive_passive():
    lease = types.SimpleNamespace(hold=lambda: False)
    n = node("passive", "a", lease=lease, peer=("active", 1, 1.0, 1.0))
    assert decide(n, 10.0) is None
    n.lease = types.SimpleNamespace(hold=lambda: True)
    assert decide(n, 10.0)[0] == "activate"
