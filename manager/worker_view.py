"""What a CEP worker needs of a plan (PROTOCOL.md section 3): imported and exported streams
with definitions, @source/@sink settings and every annotation verbatim."""

from cep.mapping import MapSpec
from cep.model import find_annotation
from manager.queryplan.reader import read_query_plan
from manager.queryplan.streams import cep_stream, definition_string
from manager.topology_builder import topology_name


def annotation_dict(a):
    return {
        "name": a.name,
        "namespace": a.namespace,
        "elements": [list(e) for e in a.elements],
        "annotations": [annotation_dict(n) for n in a.annotations],
    }


def io_settings(a):
    """`@source(type='http', k='v', @map(type='json', @attributes(...)))` -> {type, options,
    map}; map is cep.mapping.MapSpec's dict form (type, options, attributes, payload)."""
    options = {k: v for k, v in a.elements if k is not None and k.lower() != "type"}
    mapping = find_annotation(a.annotations, "map")
    return {
        "type": a.get("type"),
        "options": options,
        "map": MapSpec.from_annotation(mapping).to_dict() if mapping is not None else None,
    }


def stream_view(definition, kind):
    annotations = definition.annotations
    key, bind = ("sources", "Import") if kind == "imported" else ("sinks", "Export")
    return {
        "stream": definition.id,
        "cepStream": cep_stream(definition, bind),
        "definition": definition_string(definition),
        "attributes": [[a.name, str(a.type)] for a in definition.attributes],
        key: [io_settings(a) for a in annotations if a.matches(key[:-1])],
        "annotations": [annotation_dict(a) for a in annotations],
    }


def plan_view(tenant, compiled, version):
    qp = read_query_plan(compiled.xml)
    model = compiled.model
    return {
        "tenant": tenant,
        "name": compiled.name,
        "topology": topology_name(compiled.name, tenant),
        "version": version,
        "receiverParallelism": qp.receiver_parallel,
        "publisherParallelism": qp.publisher_parallel,
        "imported": [stream_view(model.stream(s.id), "imported") for s in qp.imported],
        "exported": [stream_view(model.stream(s.id), "exported") for s in qp.exported],
    }
