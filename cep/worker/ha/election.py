"""Who is active: the rules of the pair's own protocol, with the Redis lease when there is one.
`decide(node, now)` returns ("activate" | "sync" | "demote", reason) or None (no change).

- starting: the lease when Redis answers; else a peer that says it is active makes us sync;
  both starting: the lower node id becomes active; no peer for ha.failover_s: active alone.
- passive/syncing: the active says it stopped (a graceful stop): take over at once;
  no active heard for ha.failover_s: take over, unless the lease is held by
  the other node, or the peer is a passive with a lower node id (it takes over instead).
- active: a peer that is active too: the higher epoch, then the lower node id stays active."""

from cep.worker.ha.exceptions import LeaseError


def _lease(node):
    """True/False from the Redis lease, None without a lease or while Redis does not answer."""
    if node.lease is None:
        return None
    try:
        return node.lease.hold()
    except LeaseError:
        return None


def _recent(node, t, now):
    return t is not None and now - t < node.failover_s


def decide(node, now):
    role, peer = node.role, node.peer
    if role == "starting":
        return _starting(node, now)
    if role == "active":
        if _recent(node, peer.heard, now) and peer.role == "active":
            if (peer.epoch, _lower(peer.node, node.node_id)) > (node.epoch, False):
                return ("demote", f"two active nodes: {peer.node} (epoch {peer.epoch}) keeps it")
        return None
    if _recent(node, peer.heard, now) and peer.role == "stopped":
        return ("activate", f"the active {peer.node} stopped and handed over")
    silent_since = peer.active_heard if peer.active_heard is not None else node.started
    if now - silent_since < node.failover_s:
        return None
    if (
        _recent(node, peer.heard, now)
        and peer.role in ("passive", "syncing", "starting")
        and _lower(peer.node, node.node_id)
    ):
        return None  # the peer is no active either and has the lower id: it takes over
    held = _lease(node)
    if held is False:
        return None  # the other node holds the lease (it may be alive but unreachable)
    return (
        "activate",
        f"no heartbeat from an active peer for {now - silent_since:.1f} s"
        + (" and the Redis lease taken" if held else ""),
    )


def _starting(node, now):
    peer = node.peer
    held = _lease(node)
    if held:
        return ("activate", "took the Redis lease")
    if _recent(node, peer.heard, now):
        if peer.role == "active":
            return ("sync", f"peer {peer.node} is active")
        if held is None and peer.role == "starting" and _lower(node.node_id, peer.node):
            return ("activate", f"cold start: node id {node.node_id} < {peer.node}")
        return None
    if held is None and now - node.started >= node.failover_s:
        return ("activate", f"no peer answered for {node.failover_s:.1f} s: active alone")
    return None


def _lower(a, b):
    """True when node id a sorts before b (the tie-break)."""
    return a is not None and b is not None and str(a) < str(b)
