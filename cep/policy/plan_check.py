"""Check a compiled plan model against a HostPolicy: @sink/@source annotations and limits.

Every error is a PlanPolicyError positioned at the annotation, query or window at fault, and
its message names the annotation (`@sink(type='file') on stream 'Out': ...`)."""

import dataclasses
import re

from cep.model import Constant, Partition, Span, TimeConstant
from cep.model.inputs import Window
from cep.policy.exceptions import PlanLimitError, PlanPolicyError, PolicyViolation
from cep.policy.files import confine

# window parameter names (cep/compiler/signatures.py) that hold an event count or a time span
COUNT_PARAMS = {"window.length", "event.count"}
TIME_PARAMS = {"window.time", "timeout", "window.delay"}


def check_plan_size(text, policy):
    """Before any parsing: the plan's bytes, and its queries counted by a scan (each query
    has exactly one `from` outside comments and strings), so a plan of 20,000 queries is
    refused at once instead of after a parse of minutes."""
    size = len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0
    if size > policy.plan_bytes:
        raise PlanLimitError(
            f"the plan is {size} bytes; the limit is {policy.plan_bytes} (limits.plan_bytes)",
            Span(1, 1, 1, 2),
        )
    if not isinstance(text, str):
        return
    count, over = 0, None
    for m in _TOKENS.finditer(text):
        if m.lastgroup == "kw":
            count += 1
            if count == policy.queries + 1:
                over = m.start()
    if over is not None:
        line = text.count("\n", 0, over) + 1
        column = over - (text.rfind("\n", 0, over) + 1) + 1
        raise PlanLimitError(
            f"the plan has {count} queries; the limit is {policy.queries} (limits.queries)",
            Span(line, column, line, column + 4),
        )


# comments and strings are skipped whole; a `from` keyword anywhere else starts a query
_TOKENS = re.compile(
    r"(?P<c1>--[^\n]*)|(?P<c2>/\*.*?\*/)|(?P<s1>'(?:[^'\\]|\\.)*')"
    r'|(?P<s2>"(?:[^"\\]|\\.)*")|(?P<kw>\b[Ff][Rr][Oo][Mm]\b)',
    re.S,
)


def check_plan(plan, policy, tenant, resolve=True):
    """Raise the first PlanPolicyError of `plan` under `policy` for `tenant`."""
    check_limits(plan, policy)
    for definition in plan.streams:
        for annotation in definition.annotations:
            if annotation.matches("sink") or annotation.matches("source"):
                _check_io(annotation, definition.id, policy, tenant, resolve)
    for table in plan.tables:
        _check_store(table, tenant)


def check_limits(plan, policy):
    """Only the size limits (plan bytes, queries, windows) and script languages: for running a
    plan in-process without its sinks and sources (the console's try-it)."""
    for function in getattr(plan, "functions", ()):
        if function.language.lower() == "python" and not policy.python_scripts:
            raise PlanPolicyError(
                f"function '{function.id}': [python] script functions run host code and are "
                f"off on this host (setting scripts.python, for trusted single-tenant setups); "
                f"write it in [JavaScript]",
                function.language_span,
            )
    if plan.source:
        check_plan_size(plan.source, policy)
    _check_query_count(plan, policy)
    for window in _windows(plan.elements):
        _check_window(window, policy)


def check_no_stores(plan):
    """For running a plan in-process without its sinks and sources (the console's try-it):
    a database table would read and write a real database from the manager, so it is
    refused at its annotation."""
    from cep.model.table_store import store_spec

    for table in plan.tables:
        spec = store_spec(table)
        if spec is not None:
            raise PlanPolicyError(
                f"@{spec.annotation.name} on table '{table.id}': a try-it run does not open "
                f"databases (datasource '{spec.datasource}'); deploy the plan, or drop the "
                f"annotation to try it with an in-memory table",
                spec.annotation.span,
            )


def _check_query_count(plan, policy):
    queries = []
    for element in plan.elements:
        queries.extend(element.queries if isinstance(element, Partition) else [element])
    if len(queries) > policy.queries:
        raise PlanLimitError(
            f"the plan has {len(queries)} queries; the limit is {policy.queries} (limits.queries)",
            queries[policy.queries].span,
        )


def _check_io(annotation, stream, policy, tenant, resolve):
    kind = str(annotation.get("type") or "").lower()
    label = f"@{annotation.name}(type='{kind}') on stream '{stream}'"
    is_sink = annotation.matches("sink")
    options = {k.lower(): v for k, v in annotation.elements if k is not None}
    try:
        if kind == "file":
            if options.get("path"):
                confine(options["path"], policy.file_roots_for(tenant))
        elif kind == "http" and is_sink:
            url = options.get("publisher.url") or options.get("url")
            if url and resolve:
                policy.http.addresses(url)
        elif kind == "redis" and is_sink:
            policy.redis_url(options)
        elif kind == "zmq" and is_sink:
            policy.zmq_sink(options)
        elif kind == "rdbms" and is_sink:  # a datasource its tenant may use, as for tables
            from cep.policy.datasources import check_datasource

            check_datasource(
                options.get("datasource") or options.get("datasource.name") or "default", tenant
            )
        elif kind in ("zmq", "http") and not is_sink:
            policy.listener(kind, options)
        else:
            _check_connector(kind, is_sink, options, policy, label)
    except PolicyViolation as exc:
        raise PlanPolicyError(f"{label}: {exc}", annotation.span) from None


def _check_connector(kind, is_sink, options, policy, label):
    """A broker connector (connectors/): known options and a configured connection."""
    from connectors.build import (
        ConnectorConfigError,
        is_sink as sink_kind,
        is_source as source_kind,
        resolve_url,
    )

    direction = "sink" if is_sink else "source"
    if not (sink_kind(kind) if is_sink else source_kind(kind)):
        return
    try:
        resolve_url(direction, kind, options, policy.brokers, label)
    except ConnectorConfigError as exc:
        raise PolicyViolation(str(exc).removeprefix(f"{label}: ")) from None


def _check_store(table, tenant):
    """An external table names a configured datasource its tenant may use."""
    from cep.model.table_store import store_spec
    from cep.policy.datasources import check_datasource

    spec = store_spec(table)
    if spec is None:
        return
    try:
        check_datasource(spec.datasource, tenant)
    except PolicyViolation as exc:
        raise PlanPolicyError(
            f"@{spec.annotation.name} on table '{table.id}': {exc}", spec.annotation.span
        ) from None


def _check_window(window, policy):
    from cep.compiler.signatures import WINDOWS, lookup

    signature = lookup(WINDOWS, window.name)
    if signature is None or window.namespace:
        return
    for param, value in zip(signature.params, window.params):
        if (
            param.name in COUNT_PARAMS
            and isinstance(value, Constant)
            and isinstance(value.value, int)
            and value.value > policy.window_length
        ):
            raise PlanLimitError(
                f"#window.{window.name}({value.value}): the limit is "
                f"{policy.window_length} events (limits.window_length)",
                _span(value, window),
            )
        if param.name in TIME_PARAMS:
            millis = _millis(value)
            if millis is not None and millis > policy.window_millis:
                raise PlanLimitError(
                    f"#window.{window.name}: a span of {millis / 1000:g} s; the limit is "
                    f"{policy.window_millis / 1000:g} s (limits.window_secs)",
                    _span(value, window),
                )


def _millis(value):
    if isinstance(value, TimeConstant):
        return value.millis
    if (
        isinstance(value, Constant)
        and isinstance(value.value, int)
        and not isinstance(value.value, bool)
    ):
        return value.value
    return None


def _span(value, window):
    span = getattr(value, "span", None)
    return span if span is not None and span.line else window.span


def _windows(node, depth=0):
    """Every Window in a model subtree (queries, joins, patterns, partitions)."""
    if depth > 200:
        return
    if isinstance(node, Window):
        yield node
    elif isinstance(node, (tuple, list)):
        for item in node:
            yield from _windows(item, depth + 1)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.name not in ("span", "text", "annotations"):
                yield from _windows(getattr(node, f.name), depth + 1)
