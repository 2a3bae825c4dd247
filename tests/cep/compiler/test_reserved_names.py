"""Reserved words as names, as Siddhi 3.2.15's grammar decides (checked against the kit):
`at`, `function`, `in`, `plan` and `trigger` are never names; every other keyword may be one,
except as the name of a trigger, a script function or its language (Siddhi's `id`, which
takes no keyword). Backquotes make any word a name. Errors say where, what and why."""

import pytest

import cep
from cep.compiler.reserved import KEYWORDS, NOT_NAMES
from cep.errors import SiddhiQLSyntaxError

# one plan per place a name goes, `{w}` standing for the word; then what the error calls it
PLACES = {
    "attribute": (
        "define stream S (a int, {w} int);\nfrom S select a insert into O;",
        "an attribute",
    ),
    "stream": (
        "define stream {w} (a int);\nfrom {w} select a insert into O;",
        "a stream (define stream {w})",
    ),
    "table": ("define table {w} (a int);", "a table (define table {w})"),
    "window": ("define window {w} (a int) length(2);", "a window (define window {w})"),
    "target": ("define stream S (a int);\nfrom S select a insert into {w};", "a stream"),
    "output attribute": (
        "define stream S (a int);\nfrom S select a as {w} insert into O;",
        "an output attribute",
    ),
    "pattern event": (
        "define stream S (a int);\nfrom every {w}=S -> e2=S select e2.a as x insert into O;",
        "a pattern event",
    ),
    "join alias": (
        "define stream S (a int);\ndefine stream T (b int);\nfrom S as {w} join T "
        "select T.b as x insert into O;",
        "a stream alias",
    ),
    "function": (
        "define stream S (a int);\nfrom S select {w}(a) as x insert into O;",
        "a function",
    ),
    "annotation": ("@{w}(x='y')\ndefine stream S (a int);", "an annotation"),
}


@pytest.mark.parametrize("word", sorted(NOT_NAMES) + ["At", "IN"])
@pytest.mark.parametrize("place", sorted(PLACES))
def test_the_five_reserved_words_are_no_names_anywhere(place, word):
    plan, what = PLACES[place]
    text = plan.format(w=word)
    with pytest.raises(SiddhiQLSyntaxError) as info:
        cep.compile(text)
    e = info.value
    assert f"'{word}' is a reserved keyword and cannot name {what.format(w=word)}" in e.message
    # positioned on the word itself
    line = text.split("\n")[e.span.line - 1]
    assert line[e.span.column - 1 : e.span.end_column - 1] == word


@pytest.mark.parametrize(
    "word",
    [
        "select",
        "from",
        "window",
        "output",
        "events",
        "as",
        "or",
        "overwrite",
        "sec",
        "string",
        "order",
        "limit",
    ],
)
def test_other_keywords_are_names_as_siddhi_allows(word):
    plan = cep.compile(
        f"define stream S (a int, {word} int);\nfrom S select a, {word} as {word}2 insert into O;"
    )
    assert [a.name for a in plan.stream("S").attributes] == ["a", word]


def test_backquotes_make_a_reserved_word_a_name():
    plan = cep.compile(
        "define stream S (a int, `at` long);\n"
        "define trigger `select` at every 1 sec;\nfrom S select `at` insert into O;"
    )
    assert [a.name for a in plan.stream("S").attributes] == ["a", "at"]


def test_the_plan_annotation_is_the_one_place_for_plan():
    cep.compile("@Plan:name('P')\n@plan:playback\ndefine stream S (a int);")
    with pytest.raises(SiddhiQLSyntaxError) as info:
        cep.compile("@plan(x='y')\ndefine stream S (a int);")
    assert "cannot name an annotation" in info.value.message


@pytest.mark.parametrize("word", ["select", "from", "overwrite", "sec", "at", "string"])
def test_no_keyword_names_a_trigger_a_function_or_its_language(word):
    assert word in KEYWORDS
    for text, what in [
        (f"define trigger {word} at every 1 sec;", "a trigger"),
        (f"define function {word}[JavaScript] return int {{ return 1; }};", "a function"),
        ("define function f[" + word + "] return int { return 1; };", "a script language"),
    ]:
        with pytest.raises(SiddhiQLSyntaxError) as info:
            cep.compile(text)
        assert f"'{word}' is a SiddhiQL keyword and cannot name {what}" in info.value.message
        assert info.value.span.column == text.index(word, 15) + 1


def test_a_word_that_is_no_keyword_still_names_a_trigger():
    plan = cep.compile("define trigger order at every 1 sec;")
    assert [t.id for t in plan.triggers] == ["order"]
