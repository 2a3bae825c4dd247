"""Render a plan's layout as CEP 4.0's XML query plan (root `storm-query-plan`) with lxml."""

import logging

from lxml import etree

from manager.exceptions import QueryPlanError
from manager.queryplan.layout import plan_layout
from manager.queryplan.streams import definition_string, element_text, table_text

log = logging.getLogger("manager.topology_manager")
RECEIVER_NAME = "EventReceiverSpout"
PUBLISHER_NAME = "EventPublisherBolt"


def _streams(parent, tag, plan, ids, partition_attrs=None):
    holder = etree.SubElement(parent, tag)
    for sid in ids:
        definition = plan.stream(sid)
        if definition is None:
            raise QueryPlanError(f"stream {sid} has no definition in the compiled plan")
        el = etree.SubElement(holder, "stream")
        if partition_attrs and sid in partition_attrs:
            el.set("partition", partition_attrs[sid])
        el.text = definition_string(definition)
    return holder


def _definitions_text(plan, ids):
    # script functions first: every group may call them (a bolt compiles its group's text)
    out = [(f.text or "").strip().rstrip(";") + ";" for f in plan.functions]
    for did in ids:
        table = plan.table(did)
        if table is not None:
            out.append(table_text(table))
        else:
            trigger = next(t for t in plan.triggers if t.id == did)
            out.append((trigger.text or "").strip().rstrip(";") + ";")
    return "\n".join(out)


def _processor(root, plan, group):
    el = etree.SubElement(
        root,
        "event-processor",
        name=group.name,
        parallel=str(group.parallel),
        enforceParallel="true" if group.enforce else "false",
    )
    etree.SubElement(el, "table-definitions").text = _definitions_text(plan, group.definitions)
    if group.windows:  # the named windows this group holds (one instance, here only)
        etree.SubElement(el, "window-definitions").text = "\n".join(
            element_text(plan.window(w)) for w in group.windows
        )
    _streams(el, "input-streams", plan, group.inputs, group.partition_attrs)
    try:
        etree.SubElement(el, "queries").text = "\n".join(element_text(e) for e in group.elements)
    except ValueError as exc:
        raise QueryPlanError(f"execution group '{group.name}': {exc}") from None
    _streams(el, "output-streams", plan, group.outputs)


def build_query_plan(plan):
    """The `storm-query-plan` element tree of a compiled ExecutionPlan."""
    layout = plan_layout(plan)
    root = etree.Element("storm-query-plan")
    receiver = etree.SubElement(
        root, "event-receiver", name=RECEIVER_NAME, parallel=str(layout.receiver_parallel)
    )
    _streams(receiver, "streams", plan, layout.imported)
    for group in layout.groups:
        _processor(root, plan, group)
    publisher = etree.SubElement(
        root, "event-publisher", name=PUBLISHER_NAME, parallel=str(layout.publisher_parallel)
    )
    _streams(publisher, "input-streams", plan, layout.exported)
    _streams(publisher, "output-streams", plan, layout.exported)
    return root


def query_plan_xml(plan):
    """The query plan as pretty-printed XML text (validated against conf/query-plan.xsd)."""
    from manager.queryplan.validate import validate_query_plan

    root = build_query_plan(plan)
    validate_query_plan(root)
    return etree.tostring(root, pretty_print=True, encoding="unicode")
