"""Parse tree to the query model: definitions, annotations and the plan (the Transformer itself).

Expressions, inputs and queries are built by the mixins in expression_builder, input_builder and
query_builder; this module assembles them into an ExecutionPlan with texts and spans."""

import dataclasses

from lark import v_args
from lark.exceptions import VisitError

from cep.compiler import literals
from cep.compiler.expression_builder import ExpressionBuilder, meta_span
from cep.compiler.input_builder import InputBuilder
from cep.compiler.query_builder import QueryBuilder
from cep.compiler.reserved import check_names
from cep.errors import AnnotationError, SiddhiQLError, SiddhiQLSyntaxError
from cep.model import (
    Annotation,
    Attribute,
    ExecutionPlan,
    FunctionDefinition,
    Partition,
    Query,
    Span,
    StreamDefinition,
    TableDefinition,
    TriggerDefinition,
    TYPES,
    Window,
    WindowDefinition,
)

# names the grammar of Siddhi 3 reserves although they can look like identifiers
RESERVED_NAMES = frozenset({"in"})
PLAN_NAMESPACES = ("plan", "app")


def _is_plan_annotation(annotation):
    return (annotation.namespace or "").lower() in PLAN_NAMESPACES


@v_args(meta=True)
class PlanTransformer(ExpressionBuilder, InputBuilder, QueryBuilder):
    """Builds the frozen query model from a SiddhiQL parse tree of `text`."""

    def __init__(self, text):
        super().__init__()
        self.text = text
        self._chain_kinds = {}

    # -- annotations --
    def annotation(self, meta, children):
        first, second, body = children
        namespace, name = (str(first), str(second)) if second is not None else (None, str(first))
        body = body or ()
        elements = tuple(b for b in body if isinstance(b, tuple))
        nested = tuple(b for b in body if isinstance(b, Annotation))
        return Annotation(name, namespace, elements, nested, meta_span(meta))

    def ann_body(self, meta, children):
        return tuple(c for c in children if c is not None)

    def ann_element(self, meta, children):
        key, value = children
        return (key, value)

    def ann_key(self, meta, children):
        return "".join(self.text[meta.start_pos : meta.end_pos].split())

    def ann_value(self, meta, children):
        token = children[0]
        return literals.unquote_string(token) if token.type == "STRING" else str(token)

    def ann_true(self, meta, children):
        return "true"

    def ann_false(self, meta, children):
        return "false"

    # -- definitions --
    def _definition_name(self, token, kind):
        return self.check_reserved(token, f"a {kind}", f"define {kind} {token}")

    def check_reserved(self, token, what, context):
        """`token` as a name, unless it is a reserved keyword such as `in`."""
        if str(token).lower() in RESERVED_NAMES:
            raise SiddhiQLSyntaxError(
                f"'{token}' is a reserved keyword and cannot name {what} ({context})",
                literals.token_span(token),
                self.text,
            )
        return str(token)

    def attr_def(self, meta, children):
        name, type_name = children
        attr_type = TYPES.get(str(type_name).lower())
        if attr_type is None:
            raise SiddhiQLSyntaxError(
                f"unknown attribute type '{type_name}' for '{name}' (expected one of "
                f"{', '.join(TYPES)})",
                literals.token_span(type_name),
                self.text,
            )
        return Attribute(str(name), attr_type, meta_span(meta))

    def stream_def(self, meta, children):
        name = self._definition_name(children[0], "stream")
        return StreamDefinition(name, tuple(children[1:]), (), "", meta_span(meta))

    def table_def(self, meta, children):
        name = self._definition_name(children[0], "table")
        return TableDefinition(name, tuple(children[1:]), (), "", meta_span(meta))

    def function_def(self, meta, children):
        name, language, type_name, body = children
        name = self._definition_name(name, "function")
        attr_type = TYPES.get(str(type_name).lower())
        if attr_type is None:
            raise SiddhiQLSyntaxError(
                f"unknown return type '{type_name}' of function '{name}' (expected one of "
                f"{', '.join(TYPES)})",
                literals.token_span(type_name),
                self.text,
            )
        return FunctionDefinition(
            name,
            str(language),
            attr_type,
            str(body)[1:-1],
            span=meta_span(meta),
            language_span=literals.token_span(language),
        )

    def window_def(self, meta, children):
        name = self._definition_name(children[0], "window")
        *attrs, call, event_type = children[1:]
        window = Window(call.name, call.args, call.namespace, call.span)
        return WindowDefinition(
            name, tuple(attrs), (), "", meta_span(meta), window, event_type or "all"
        )

    def trigger_every(self, meta, children):
        name = self._definition_name(children[0], "trigger")
        period = children[1].millis
        if period <= 0:
            raise SiddhiQLSyntaxError(
                "a trigger period must be positive", children[1].span, self.text
            )
        return TriggerDefinition(name, every_millis=period, span=meta_span(meta))

    def trigger_at(self, meta, children):
        name = self._definition_name(children[0], "trigger")
        value = literals.unquote_string(children[1])
        if value.strip().lower() == "start":
            return TriggerDefinition(name, at_start=True, span=meta_span(meta))
        if not 6 <= len(value.split()) <= 7:
            raise SiddhiQLSyntaxError(
                f"trigger '{name}' at {value!r}: expected 'start' or a cron expression of 6 or "
                f"7 fields (sec min hour day month weekday [year])",
                literals.token_span(children[1]),
                self.text,
            )
        return TriggerDefinition(name, cron=value, span=meta_span(meta))

    # -- the plan --
    def attach_annotations(self, items, inside_partition=False):
        """Give each element the annotations before it, its full text and span."""
        out, pending = [], []
        for item in items:
            if isinstance(item, Annotation):
                pending.append(item)
                continue
            out.append(self._with_annotations(item, pending))
            pending = []
        if pending:
            where = "in a partition" if inside_partition else "at the end of the plan"
            raise AnnotationError(
                f"annotation @{pending[0].name} {where} is not followed by a definition or query",
                pending[0].span,
                self.text,
            )
        return out

    def _with_annotations(self, element, annotations):
        span = element.span
        if annotations:
            first = annotations[0].span
            span = Span(
                first.line,
                first.column,
                span.end_line,
                span.end_column,
                first.start_pos,
                span.end_pos,
            )
        return dataclasses.replace(
            element,
            annotations=tuple(annotations),
            text=self.text[span.start_pos : span.end_pos],
            span=span,
        )

    def start(self, meta, children):
        items = [c for c in children if c is not None]
        plan_annotations = [
            a for a in items if isinstance(a, Annotation) and _is_plan_annotation(a)
        ]
        rest = [c for c in items if not (isinstance(c, Annotation) and _is_plan_annotation(c))]
        elements = self.attach_annotations(rest)
        self._check_order(elements)
        return ExecutionPlan(
            annotations=tuple(plan_annotations),
            streams=tuple(e for e in elements if type(e) is StreamDefinition),
            tables=tuple(e for e in elements if isinstance(e, TableDefinition)),
            triggers=tuple(e for e in elements if isinstance(e, TriggerDefinition)),
            functions=tuple(e for e in elements if isinstance(e, FunctionDefinition)),
            windows=tuple(e for e in elements if isinstance(e, WindowDefinition)),
            elements=tuple(e for e in elements if isinstance(e, (Query, Partition))),
            source=self.text,
        )

    def _check_order(self, elements):
        seen_query = False
        for e in elements:
            if isinstance(e, (Query, Partition)):
                seen_query = True
            elif seen_query:
                raise SiddhiQLSyntaxError(
                    "definitions must come before the first query: 'define' after a query",
                    e.span,
                    self.text,
                )


def to_model(tree, text):
    """The ExecutionPlan (not yet validated) of parse tree `tree` of `text`."""
    check_names(tree, text)
    try:
        return PlanTransformer(text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, SiddhiQLError):
            raise exc.orig_exc from None
        raise
