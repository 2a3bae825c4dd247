"""Text to parse tree: the cached LALR parser for siddhiql.lark; syntax errors with positions."""

import functools
import os
import pkgutil
import re

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from cep.errors import SiddhiQLSyntaxError
from cep.model.span import Span

GRAMMAR_PATH = os.path.join(os.path.dirname(__file__), "siddhiql.lark")

# how expected terminals read in messages (keywords read as their uppercase names)
_PUNCTUATION = {
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "SEMICOLON": "';'",
    "COLON": "':'",
    "DOT": "'.'",
    "HASH": "'#'",
    "AT": "'@'",
    "EQUAL": "'='",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "PERCENT": "'%'",
    "LESSTHAN": "'<'",
    "MORETHAN": "'>'",
    "QMARK": "'?'",
    "NAME": "a name",
    "QUOTED_NAME": "a name",
    "STRING": "a string",
    "INT": "an int",
    "LONG": "a long",
    "FLOAT": "a float",
    "DOUBLE": "a double",
    "$END": "end of plan",
}
# the keywords a statement starts with: seeing one where the grammar wanted more of the
# previous statement usually means a missing ';'
_STATEMENT_STARTS = {"_DEFINE", "_FROM", "_PARTITION", "AT"}


@functools.lru_cache(maxsize=1)
def get_parser():
    """The LALR parser, built once per process."""
    # through the package's loader: the grammar is also read from a zip (code shipped to
    # Spark executors with spark.submit.pyFiles, topology/packaging.py)
    grammar = pkgutil.get_data(__package__, "siddhiql.lark").decode("utf-8")
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
    )


def parse_tree(text):
    """The lark parse tree of `text`; raises SiddhiQLSyntaxError with line and column."""
    try:
        return get_parser().parse(text)
    except UnexpectedToken as exc:
        raise _token_error(exc, text) from None
    except UnexpectedCharacters as exc:
        raise _char_error(exc, text) from None
    except UnexpectedEOF as exc:
        raise _eof_error(exc, text) from None


def terminal_display(name):
    """A readable spelling of terminal `name` for messages."""
    if name in _PUNCTUATION:
        return _PUNCTUATION[name]
    if name.startswith("__ANON"):
        try:
            term = get_parser().get_terminal(name)
            return repr(term.pattern.value)
        except KeyError:
            return name
    return name.lstrip("_")


def _expected_list(expected):
    """Keywords first (as SELECT, INSERT...), then names and literals, then punctuation."""
    names = {terminal_display(e) for e in expected if e not in ("WS", "COMMENT")}
    words = sorted(n for n in names if n.isupper())
    return ", ".join(words + sorted(names - set(words)))


def _acceptable(exc):
    """The terminals the parser would really accept here (LALR's merged lookaheads over-report)."""
    try:
        return set(exc.interactive_parser.accepts())
    except Exception:  # no interactive parser for this error: fall back to lark's set
        return set(exc.expected)


def _token_span(token, text):
    if token.type == "$END" or token.line is None:
        return _end_span(text)
    return Span(
        token.line, token.column, token.end_line, token.end_column, token.start_pos, token.end_pos
    )


def _end_span(text):
    lines = text.splitlines() or [""]
    line, column = len(lines), len(lines[-1]) + 1
    return Span(line, column, line, column + 1, len(text), len(text))


def _token_error(exc, text):
    token = exc.token
    if token.type == "$END":
        return _eof_error(exc, text)
    span = _token_span(token, text)
    expected = _acceptable(exc)
    message = f"mismatched input '{token}' expecting {_expected_list(expected)}"
    hint = _hint(token, expected) or _keyword_as_name_hint(token, text)
    return SiddhiQLSyntaxError(message + (f" ({hint})" if hint else ""), span, text)


def _hint(token, expected):
    """A friendly guess at the usual mistake behind an unexpected token."""
    if token.type in _STATEMENT_STARTS and "SEMICOLON" in expected:
        return "missing ';' before it?"
    if token.type == "NAME" and "_SELECT" in expected:
        return "did you mean SELECT or INSERT?"
    if token.type == "_IN" or str(token).lower() == "in":
        return "'in' is a reserved keyword and cannot be a name"
    return ""


_CLAUSE_WORDS = {
    "select",
    "insert",
    "from",
    "group",
    "having",
    "output",
    "order",
    "limit",
    "delete",
    "update",
    "within",
    "on",
    "join",
    "define",
    "partition",
}


def _keyword_as_name_hint(token, text):
    """A clause keyword right before the bad token was read as a name (`select a, insert`)."""
    before = text[: token.start_pos].rstrip()
    word = re.search(r"([A-Za-z_]+)$", before)
    if word and word.group(1).lower() in _CLAUSE_WORDS:
        return (
            f"'{word.group(1)}' was read as a name here: is something missing or extra "
            f"before it, such as a trailing ','?"
        )
    return ""


def _char_error(exc, text):
    char = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
    span = Span(
        exc.line, exc.column, exc.line, exc.column + 1, exc.pos_in_stream, exc.pos_in_stream + 1
    )
    expected = set(exc.allowed or ())
    message = f"unexpected character '{char}'"
    if expected:
        message += f" expecting {_expected_list(expected)}"
    if char in "'\"":
        message += " (unterminated string?)"
    return SiddhiQLSyntaxError(message, span, text)


def _eof_error(exc, text):
    expected = set(getattr(exc, "expected", ()) or ())
    message = "unexpected end of plan"
    if expected:
        message += f" expecting {_expected_list(expected)}"
    return SiddhiQLSyntaxError(message, _end_span(text), text)
