"""2-node minimum HA for standalone workers: two `cep worker --mode standalone
--ha-peer URL` processes form an active/passive pair. Both run every plan over every event;
the active writes the outputs, the passive queues them (numbered alike on both nodes) and
writes what the active did not report as published when it takes over. See README.md of
cep/worker, section "2-node HA".

    node = attach(worker)     # None without ha.peer; wires the node into the worker
"""

from cep.worker.ha.settings import HA_SETTINGS, check_ha

__all__ = ["HA_SETTINGS", "attach", "check_ha"]


def create(cfg):
    """An HaNode for the settings (None without ha.peer): secret and Redis lease included."""
    if not cfg["ha.peer"]:
        return None
    from cep.security import cluster_secret
    from cep.worker.ha.exceptions import HaConfigError
    from cep.worker.ha.lease import RedisLease
    from cep.worker.ha.node import HaNode

    try:
        secret = cluster_secret.read(cfg["managers.cluster_secret_file"] or None)
    except FileNotFoundError as exc:
        raise HaConfigError(str(exc)) from None
    if not secret:
        raise HaConfigError(
            "ha.peer needs the cluster secret the two nodes share "
            "(--cluster-secret-file or CEP_CLUSTER_SECRET): peer calls are "
            "authenticated"
        )
    lease = None
    if cfg["ha.redis_url"]:
        lease = RedisLease(
            cfg["ha.redis_url"], cfg["ha.lease_key"], cfg["ha.node_id"], cfg["ha.failover_s"]
        )
    return HaNode(cfg, secret, lease)


def blueprints(node):
    """The /ha/* routes when the worker is in a pair."""
    if node is None:
        return []
    from cep.worker.ha.api import ha_blueprint

    return [ha_blueprint(node, node.client.secret)]


def attach(worker):
    """Bind the node to the worker once its identity is known."""
    return worker.ha.bind(worker) if worker.ha is not None else None
