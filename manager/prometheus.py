"""The manager's Prometheus metrics (`GET /metrics`, text exposition by prometheus_client).

Per tenant, plan, component and instance: events in and out, errors (Storm's `failed`),
capacity and input queue depth, from the last metrics sample of each running topology (the
MetricsHistory, restart-adjusted so counters never go back); an execute-latency histogram
fed by the sampler (one observation per instance and sample: that interval's mean execute()
time); connections per plan and per registry endpoint; topology states and workers.
Each manager has its own CollectorRegistry, so tests and several managers in one process do
not clash with each other or with the process-wide default registry."""

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from manager.queryplan.builder import RECEIVER_NAME

INSTANCE = ["tenant", "plan", "component", "instance"]
# one decade per two buckets, 0.1 ms to 5 s: a batch's execute() is usually 0.1-10 ms; every
# bucket is a series per instance, so 200 plans' scrape stays in the low megabytes
LATENCY_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5)


def _counter(name, doc, labels=INSTANCE):
    return CounterMetricFamily(name, doc, labels=labels)


def _gauge(name, doc, labels=INSTANCE):
    return GaugeMetricFamily(name, doc, labels=labels)


JETSTREAM_SERIES = (  # (stream_report key, metric name, help) of the NATS transport
    ("messages", "stored_messages", "messages the plan's inflow/outflow stream holds"),
    ("published", "published_messages", "messages the stream took (its last sequence)"),
    ("acked", "acked_messages", "the lowest acknowledgement floor of its consumers (sequence)"),
    (
        "pending",
        "pending_messages",
        "the most messages one of its consumers has not acknowledged (unread or unacked)",
    ),
    ("consumers", "consumers", "durable consumers of the stream"),
    ("reading", "reading_consumers", "consumers with a pull waiting or a delivery in 10 s"),
)


class ManagerCollector:
    """Metric families built at scrape time from the manager's live state."""

    def __init__(self, manager):
        self.manager = manager

    def collect(self):
        yield from self._components()
        yield from self._plans()
        yield from self._registry()

    def _components(self):
        fams = {
            "in": _counter(
                "cep_component_events_in",
                "events into the instance (executed "
                "by a bolt, taken in from workers by a receiver spout)",
            ),
            "out": _counter("cep_component_events_out", "events emitted by the instance"),
            "errors": _counter("cep_component_errors", "events that failed in the instance"),
            "queue": _gauge(
                "cep_component_queue_depth",
                "events sent to the instance and not yet received by it",
            ),
            "capacity": _gauge(
                "cep_component_capacity",
                "busy fraction of the instance over the last interval (Storm's capacity)",
            ),
        }
        history = self.manager.history
        for tenant, plan in history.keys():
            latest, gauges = history.latest((tenant, plan))
            if latest is None:
                continue
            for key, value in latest.items():
                if key[0] != "i":
                    continue
                _, comp, idx, name = key
                labels = [str(tenant), plan, comp, str(idx)]
                spout = comp == RECEIVER_NAME
                if name == "executed" or (spout and name == "emitted"):
                    fams["in"].add_metric(labels, value)
                if name == "emitted":
                    fams["out"].add_metric(labels, value)
                elif name == "failed":
                    fams["errors"].add_metric(labels, value)
            for comp, g in gauges.items():
                for idx, inst in g["per_instance"].items():
                    labels = [str(tenant), plan, comp, str(idx)]
                    fams["queue"].add_metric(labels, inst["queue"])
                    fams["capacity"].add_metric(labels, inst["capacity"])
        return fams.values()

    def _plans(self):
        state = _gauge(
            "cep_topology_state",
            "1 for the state the plan's topology is in",
            ["tenant", "plan", "state"],
        )
        inflow = _gauge(
            "cep_plan_inflow_connections",
            "a worker's live connections to the plan's receiver spouts (one per imported stream)",
            ["tenant", "plan", "worker"],
        )
        outflow = _gauge(
            "cep_plan_outflow_connections",
            "publisher bolt instances with a live connection to a worker",
            ["tenant", "plan"],
        )
        jetstream = {  # the NATS transport's streams (stream_report keys)
            key: _gauge(f"cep_plan_jetstream_{metric}", doc, ["tenant", "plan", "direction"])
            for key, metric, doc in JETSTREAM_SERIES
        }
        plans = self.manager.plans
        for tenant, name in sorted(plans.compiled):
            try:
                st = plans.status(tenant, name)
            except Exception:  # noqa: BLE001 - a plan removed meanwhile
                continue
            state.add_metric([str(tenant), name, st["state"]], 1)
            for worker, c in st["inflow"].items():
                inflow.add_metric([str(tenant), name, worker], c["connected"])
            outflow.add_metric([str(tenant), name], st["outflow"]["connected"])
            if st.get("transport") == "nats":
                flows = (("in", st["inflow"].get("jetstream") or {}), ("out", st["outflow"]))
                for direction, flow in flows:
                    if not flow.get("exists"):
                        continue
                    for key, gauge in jetstream.items():
                        gauge.add_metric([str(tenant), name, direction], flow[key])
        return state, inflow, outflow, *jetstream.values()

    def _registry(self):
        table = self.manager.registry.table
        conns = _gauge(
            "cep_registry_endpoint_connections",
            "live connections to a registered endpoint",
            ["kind", "tenant", "plan", "endpoint"],
        )
        eps = _gauge("cep_registry_endpoints", "registered endpoints", ["kind", "stale"])
        counts = {}
        for ep, stale in table.snapshot():
            conns.add_metric(
                [ep["kind"], str(ep["tenant"]), ep["plan"], ep["endpoint"]], ep["connections"]
            )
            key = (ep["kind"], "true" if stale else "false")
            counts[key] = counts.get(key, 0) + 1
        for (kind, stale), n in sorted(counts.items()):
            eps.add_metric([kind, stale], n)
        workers = _gauge("cep_workers", "workers reporting to the registry", ["stale"])
        infos = table.worker_infos()
        stale = sum(1 for age, _ in infos if age > table.liveness)
        workers.add_metric(["false"], len(infos) - stale)
        workers.add_metric(["true"], stale)
        return conns, eps, workers


class ManagerMetrics:
    """The manager's CollectorRegistry and the latency histogram the sampler feeds."""

    def __init__(self, manager):
        self.registry = CollectorRegistry(auto_describe=False)
        self.latency = Histogram(
            "cep_component_execute_latency_seconds",
            "mean execute() time of an instance per metrics interval",
            INSTANCE,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(ManagerCollector(manager))
        self.manager = manager
        self.series = {}  # topology key -> label tuples observed (removed with the plan)

    def observe(self, key, components):
        """One sample of a topology: observe each instance's interval latency."""
        tenant, plan = key
        seen = self.series.setdefault(key, set())
        for comp, c in components.items():
            for inst in c["instances"]:
                ms = inst.get("execute_latency_ms", 0.0)
                if ms > 0:
                    labels = (str(tenant), plan, comp, str(inst["index"]))
                    self.latency.labels(*labels).observe(ms / 1000.0)
                    seen.add(labels)
        self._prune()

    def _prune(self):
        """Drop the histogram series of plans no longer sampled (removed or renamed)."""
        live = set(self.manager.history.keys())
        for key in [k for k in self.series if k not in live]:
            for labels in self.series.pop(key):
                self.latency.remove(*labels)
