"""Words SiddhiQL reserves, checked on a parse tree before it becomes the model.

Our grammar reads a keyword as a name wherever the grammar does not expect the keyword there
(lark's contextual lexer). Siddhi 3.2's grammar is stricter, and these checks reject what it
rejects, with the place and the reason:
- Where SiddhiQL.g4 takes a `name` (streams, tables, windows, attributes, aliases, pattern
  events, references, functions, annotations), every keyword is allowed (its `keyword` rule)
  except five: `at`, `function`, `in`, `plan` and `trigger` (`@Plan:` is the one place `plan`
  is written).
- Where it takes an `id` (a trigger's name, a script function's name and its language), no
  keyword is allowed at all.
Backquotes (`` `at` ``) make any word a name, as in Siddhi."""

from lark import Token, Tree

from cep.compiler import literals
from cep.errors import SiddhiQLSyntaxError

# the keyword tokens of Siddhi 3.2.15's SiddhiQL.g4 that its `name` rule leaves out
NOT_NAMES = frozenset({"at", "function", "in", "plan", "trigger"})
# every keyword token of Siddhi 3.2.15's lexer (case-insensitive; the time units' short forms)
KEYWORDS = NOT_NAMES | frozenset(
    """
    stream define table from partition window select group by having insert delete update
    return events into output expired current snapshot for raw of as or and on is not within
    with begin end null every last all first join inner outer right left full unidirectional
    overwrite year years month months week weeks day days hour hours min minute minutes sec
    second seconds millisec millisecond milliseconds false true string int long float double
    bool object""".split()
)

# what a `name` is, by the rule it appears in (and its place there)
_ROLE = {
    "stream_def": "a stream",
    "table_def": "a table",
    "window_def": "a window",
    "attr_def": "an attribute",
    "out_attr": "an output attribute",
    "stateful": "a pattern event",
    "join_source": "a stream alias",
    "stream_source": "a stream",
    "inner_source": "a stream",
    "in_table": "a table",
    "value_key": "a stream",
    "range_key": "a stream",
    "var": "an attribute",
    "group_by": "an attribute",
    "order_item": "an attribute",
    "annotation": "an annotation",
    "ann_key": "an annotation element",
}
_DEFINES = {"stream_def": "stream", "table_def": "table", "window_def": "window"}
# (rule, place) of the names that are `id`s in Siddhi's grammar: no keyword at all
_IDS = {
    ("trigger_every", 0): "a trigger",
    ("trigger_at", 0): "a trigger",
    ("function_def", 0): "a function",
    ("function_def", 1): "a script language",
}
# (rule, place) of a `name` that is not a name in Siddhi's grammar (a type keyword)
_NOT_A_NAME = {("attr_def", 1), ("function_def", 2)}


def check_names(tree: Tree, text: str) -> None:
    """Raise a positioned SiddhiQLSyntaxError at the first reserved word used as a name."""
    for node in tree.iter_subtrees_topdown():
        for place, child in enumerate(node.children):
            if not (isinstance(child, Tree) and child.data == "name"):
                continue
            token = child.children[0]
            if not isinstance(token, Token) or token.type != "NAME":
                continue  # a quoted name may be any word
            word = str(token).lower()
            rule = str(node.data)
            if (rule, place) in _NOT_A_NAME:
                continue
            what = _IDS.get((rule, place))
            if what is not None:
                if word in KEYWORDS:
                    raise SiddhiQLSyntaxError(
                        f"'{token}' is a SiddhiQL keyword and cannot name {what}: Siddhi "
                        f"allows no keyword as the name of a trigger, a function or a "
                        f"script language (write `{token}` in backquotes to use it)",
                        literals.token_span(token),
                        text,
                    )
                continue
            if word not in NOT_NAMES or _plan_annotation(node, place, word):
                continue
            raise SiddhiQLSyntaxError(
                _message(token, node, place), literals.token_span(token), text
            )


def _plan_annotation(node, place, word):
    """`@Plan:name(...)`: the one place where `plan` is the keyword itself."""
    return (
        word == "plan"
        and node.data == "annotation"
        and place == 0
        and len(node.children) > 1
        and node.children[1] is not None
    )


def _message(token, node, place):
    rule = str(node.data)
    kind = _DEFINES.get(rule)
    if kind is not None and place == 0:
        what = f"a {kind} (define {kind} {token})"
    elif rule == "function_call":
        what = "a function namespace" if _has_namespace(node) and place == 0 else "a function"
    elif rule in ("qualified_var", "indexed_var", "inner_var", "is_null_indexed"):
        what = "an attribute" if place == len(node.children) - 1 else "a stream or event"
    else:
        what = _ROLE.get(rule, "a name")
    return (
        f"'{token}' is a reserved keyword and cannot name {what}: SiddhiQL reserves "
        f"'at', 'function', 'in', 'plan' and 'trigger' (write `{token}` in backquotes "
        f"to use it as a name)"
    )


def _has_namespace(node):
    names = [c for c in node.children if isinstance(c, Tree) and c.data == "name"]
    return len(names) == 2 and node.children[0] is names[0]
