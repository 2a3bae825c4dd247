"""Build the plan topology from the XML query plan (what is logged is what runs).

One receiver spout (`EventReceiverSpout`, receivers/spout.py), one Siddhi bolt per
`event-processor` (cep/bolt.py), one publisher bolt (`EventPublisherBolt`, publishers/bolt.py);
with `transport: nats` in `extra` (topology.transport) the spout and publisher bolt are the
NATS JetStream ones (receivers/nats_spout.py, publishers/nats_bolt.py).
Every component declares one stream per Siddhi stream with fields `_timestamp, attr...` and
emits rows in that order, so a fields grouping on the partition attribute hashes that
attribute's value (CEP 4.0 declared `_timestamp` first but emitted it last, hashing the
wrong column)."""

import logging

from manager.queryplan.builder import PUBLISHER_NAME, RECEIVER_NAME
from manager.queryplan.reader import read_query_plan
from topology.model import Grouping, Topology

log = logging.getLogger("manager.topology_manager")
TIMESTAMP = "_timestamp"
TICK_STREAM = "_tick"  # spout -> every Siddhi bolt (all grouping): timer output leaves on ticks
SPOUT_CLASS = "receivers.spout:ReceiverSpout"
SIDDHI_BOLT_CLASS = "cep.bolt:SiddhiBolt"
PUBLISHER_CLASS = "publishers.bolt:PublisherBolt"
# topology.transport: nats (connectors/nats_transport.py): JetStream instead of ZeroMQ
NATS_SPOUT_CLASS = "receivers.nats_spout:NatsReceiverSpout"
NATS_PUBLISHER_CLASS = "publishers.nats_bolt:NatsPublisherBolt"


def topology_name(plan, tenant):
    """CEP 4.0's topology name: `<PlanName>[<tenantId>]`."""
    return f"{plan}[{tenant}]"


def attribute_names(definition):
    """Attribute names of `define stream Id ( a type, b type );`."""
    inner = definition[definition.index("(") + 1 : definition.rindex(")")]
    return [part.split()[0] for part in inner.split(",") if part.strip()]


def _fields(specs):
    return {s.id: [TIMESTAMP, *attribute_names(s.definition)] for s in specs}


def _producers(qp):
    """{stream id: [component ids that emit it]}."""
    out = {}
    for s in qp.imported:
        out.setdefault(s.id, []).append(RECEIVER_NAME)
    for p in qp.processors:
        for s in p.outputs:
            out.setdefault(s.id, []).append(p.name)
    return out


def _inputs(consumer, streams, producers):
    """{(producer, stream): grouping} for a consumer's input streams."""
    inputs = {}
    for s in streams:
        for producer in producers.get(s.id, ()):
            if producer == consumer:
                continue
            grouping = Grouping.by_fields(s.partition) if s.partition else Grouping.shuffle()
            log.debug(
                "Connecting storm components [Consumer:%s, Stream:%s, Publisher:%s, Grouping:%s]",
                consumer,
                s.id,
                producer,
                "FieldGrouping" if s.partition else "ShuffleGrouping",
            )
            inputs[(producer, s.id)] = grouping
    return inputs


def build_topology(xml, tenant, plan, registry_url, host, playback=False, extra=None):
    """The Topology of one plan from its XML query plan text."""
    qp = read_query_plan(xml)
    common = {
        "tenant": tenant,
        "plan": plan,
        "registry": registry_url,
        "host": host,
        **(extra or {}),
    }
    topo = Topology(topology_name(plan, tenant), config={"tenant": tenant, "plan": plan})
    nats = (extra or {}).get("transport") == "nats"
    topo.add_spout(
        RECEIVER_NAME,
        NATS_SPOUT_CLASS if nats else SPOUT_CLASS,
        qp.receiver_parallel,
        {**_fields(qp.imported), TICK_STREAM: [TIMESTAMP]},
        {**common, "streams": {s.id: attribute_names(s.definition) for s in qp.imported}},
    )
    producers = _producers(qp)
    for p in qp.processors:
        inputs = {
            **_inputs(p.name, p.inputs, producers),
            (RECEIVER_NAME, TICK_STREAM): Grouping.all(),
        }
        topo.add_bolt(
            p.name,
            SIDDHI_BOLT_CLASS,
            inputs,
            p.parallel,
            _fields(p.outputs),
            {
                "tenant": tenant,
                "plan": plan,
                "group": p.name,
                "playback": playback,
                **{
                    k: v
                    for k, v in (extra or {}).items()
                    if k in ("table_rows", "datasources", "scripts")
                },
                "table_definitions": p.table_definitions,
                "queries": p.queries,
                "window_definitions": p.window_definitions,
                "inputs": [s.definition for s in p.inputs],
                "outputs": [s.definition for s in p.outputs],
            },
        )
    topo.add_bolt(
        PUBLISHER_NAME,
        NATS_PUBLISHER_CLASS if nats else PUBLISHER_CLASS,
        _inputs(PUBLISHER_NAME, qp.exported, producers),
        qp.publisher_parallel,
        {},
        {**common, "streams": {s.id: attribute_names(s.definition) for s in qp.exported}},
    )
    return topo.validate(check_classes=False)
