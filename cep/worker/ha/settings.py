"""The ha.* settings of a standalone worker pair, declared once (cep/worker/config.py lists them
in the worker schema) and checked with the rest of the worker settings."""

from cep.protocol.settings import Setting

HA_SETTINGS = [
    Setting(
        "ha",
        "peer",
        str,
        "",
        "standalone: the other worker of an active/passive pair "
        "(http://host:port, --ha-peer); empty means no pair",
    ),
    Setting(
        "ha",
        "node_id",
        str,
        "",
        "this node's id in the pair (the cold-start tie-break: "
        "the lower id becomes active); empty means the worker id",
    ),
    Setting(
        "ha",
        "forward",
        bool,
        False,
        "true: the active forwards every accepted event to "
        "the passive before it answers (clients send to the active only); false: clients "
        "send every event to both nodes",
    ),
    Setting(
        "ha",
        "sync_interval",
        float,
        1.0,
        "seconds between the heartbeats that carry the "
        "active's last published output sequences (the passive trims its queue by them)",
    ),
    Setting(
        "ha",
        "failover_s",
        float,
        5.0,
        "seconds without a heartbeat from the active "
        "before the passive takes over (also the Redis lease's time to live)",
    ),
    Setting(
        "ha",
        "queue_events",
        int,
        1_000_000,
        "most outputs the passive queues per plan; "
        "beyond it the oldest are dropped and counted (ha overflow)",
    ),
    Setting(
        "ha",
        "forward_timeout_s",
        float,
        2.0,
        "longest wait for the passive to take a "
        "forwarded batch; after it the active goes on alone and the passive resyncs",
    ),
    Setting(
        "ha",
        "redis_url",
        str,
        "",
        "Redis holding the pair's lease (--redis-url); empty "
        "means the pair's own heartbeat protocol decides who is active",
    ),
    Setting("ha", "lease_key", str, "cep:ha:lease", "Redis key of the pair's lease"),
    Setting(
        "ha",
        "playback",
        bool,
        True,
        "run HA plans on event time, so both nodes compute "
        "the same outputs (events without a timestamp are stamped by the node that takes "
        "them in: send timestamps when clients send to both nodes)",
    ),
]


def check_ha(cfg):
    """Raise HaConfigError naming the bad ha.* setting."""
    from cep.worker.ha.exceptions import HaConfigError

    if not cfg["ha.peer"]:
        return
    if cfg["worker.mode"] != "standalone":
        raise HaConfigError(
            f"setting ha.peer ({cfg.source('ha.peer')}): an HA pair is for "
            f"standalone workers (--mode standalone)"
        )
    if not cfg["ha.peer"].startswith(("http://", "https://")):
        raise HaConfigError(
            f"setting ha.peer ({cfg.source('ha.peer')}): {cfg['ha.peer']!r} is "
            f"not an http(s):// URL of the other worker"
        )
    for name in ("ha.sync_interval", "ha.failover_s", "ha.forward_timeout_s"):
        if cfg[name] <= 0:
            raise HaConfigError(f"setting {name} ({cfg.source(name)}): must be > 0")
    if cfg["ha.failover_s"] < 2 * cfg["ha.sync_interval"]:
        raise HaConfigError(
            f"setting ha.failover_s ({cfg.source('ha.failover_s')}): must be at "
            f"least twice ha.sync_interval ({cfg['ha.sync_interval']} s)"
        )
    if cfg["ha.queue_events"] < 1:
        raise HaConfigError(
            f"setting ha.queue_events ({cfg.source('ha.queue_events')}): must be >= 1"
        )
