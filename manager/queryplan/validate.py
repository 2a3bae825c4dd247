"""Validate an XML query plan: the schema in conf/query-plan.xsd, then stream production."""

import functools
from pathlib import Path

from lxml import etree

from manager.exceptions import QueryPlanError

SCHEMA_NAME = "query-plan.xsd"
REPO_CONF = Path(__file__).resolve().parents[2] / "conf"


def schema_path():
    """conf/query-plan.xsd (CEP_CONF_DIR first, then the project's conf/)."""
    from cep.protocol.settings import default_conf_dir

    for d in (default_conf_dir(), REPO_CONF):
        if (Path(d) / SCHEMA_NAME).is_file():
            return Path(d) / SCHEMA_NAME
    raise QueryPlanError(f"schema {SCHEMA_NAME} not found in {default_conf_dir()} or {REPO_CONF}")


@functools.lru_cache(maxsize=4)
def _schema(path):
    return etree.XMLSchema(etree.parse(str(path)))


def stream_id(text):
    """The id in `define stream <id> ( ... );` (the third token, as CEP 4.0 reads it)."""
    parts = (text or "").split()
    if len(parts) < 3 or parts[:2] != ["define", "stream"]:
        raise QueryPlanError(f"not a stream definition: {text!r}")
    return parts[2].split("(", 1)[0]


def validate_query_plan(root):
    """Raise QueryPlanError unless `root` (element or XML text) is a valid query plan."""
    if isinstance(root, (str, bytes)):
        try:
            root = etree.fromstring(root.encode() if isinstance(root, str) else root)
        except etree.XMLSyntaxError as exc:
            raise QueryPlanError(f"query plan is not well-formed XML: {exc}") from None
    schema = _schema(schema_path())
    if not schema.validate(root):
        err = schema.error_log.last_error
        raise QueryPlanError(
            f"query plan does not match {SCHEMA_NAME}: line {err.line}: {err.message}"
        )
    produced = {stream_id(s.text) for s in root.iterfind("event-receiver/streams/stream")}
    produced |= {stream_id(s.text) for s in root.iterfind("event-processor/output-streams/stream")}
    for s in root.iterfind("event-publisher/input-streams/stream"):
        if stream_id(s.text) not in produced:
            raise QueryPlanError(
                f"Event publisher bolt(s) trying to consume stream "
                f"{stream_id(s.text)} not produced by any bolt/spout"
            )
    return root
