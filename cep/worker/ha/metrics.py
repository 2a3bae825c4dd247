"""Prometheus families of the HA pair, read from the node at scrape time."""

import time

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from cep.worker.ha.node import ROLES


def ha_families(wid, node):
    """Role (one gauge per role, 1 for the current one), fail-overs, last sync age, and per
    plan the passive's queue, overflow, re-published outputs and possible duplicates."""
    d = node.describe()
    role = GaugeMetricFamily(
        "cep_worker_ha_role", "1 for this node's role in the HA pair", labels=["worker", "role"]
    )
    for r in ROLES:
        role.add_metric([wid, r], 1 if d["role"] == r else 0)
    failovers = CounterMetricFamily(
        "cep_worker_ha_failovers", "take-overs by this node", labels=["worker"]
    )
    failovers.add_metric([wid], d["failovers"])
    peer_age = GaugeMetricFamily(
        "cep_worker_ha_peer_last_heard_seconds",
        "seconds since the peer's last heartbeat (-1: never)",
        labels=["worker"],
    )
    peer_age.add_metric(
        [wid], -1 if d["peer"]["last_heard_s"] is None else d["peer"]["last_heard_s"]
    )
    sync_age = GaugeMetricFamily(
        "cep_worker_ha_last_sync_age_seconds",
        "seconds since the active's last published sequences trimmed this node's queue (-1: never)",
        labels=["worker"],
    )
    sync_age.add_metric(
        [wid], -1 if d["last_sync"] is None else max(0.0, time.time() - d["last_sync"])
    )
    yield from (role, failovers, peer_age, sync_age)
    yield from _plan_families(wid, d["plans"])


def _plan_families(wid, plans):
    labels = ["worker", "tenant", "plan"]
    fams = {
        "queue_events": GaugeMetricFamily(
            "cep_worker_ha_queue_events",
            "outputs the passive holds until the active reports them published",
            labels=labels,
        ),
        "overflow": CounterMetricFamily(
            "cep_worker_ha_queue_overflow",
            "outputs dropped from a full passive queue (ha.queue_events)",
            labels=labels,
        ),
        "republished": CounterMetricFamily(
            "cep_worker_ha_republished",
            "outputs written from the queue at a take-over",
            labels=labels,
        ),
        "duplicates": CounterMetricFamily(
            "cep_worker_ha_duplicates",
            "of those, outputs the "
            "old active may have written too (at most one sync "
            "interval's worth)",
            labels=labels,
        ),
        "in_seq": GaugeMetricFamily(
            "cep_worker_ha_input_sequence",
            "input batches the plan took (both nodes alike when in sync)",
            labels=labels,
        ),
    }
    for key, p in plans.items():
        tenant, plan = key.split("/", 1)
        for name, fam in fams.items():
            fam.add_metric([wid, tenant, plan], p[name])
    yield from fams.values()
