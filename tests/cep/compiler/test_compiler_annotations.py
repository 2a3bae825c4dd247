"""Annotations: parsing (values, keys, nesting, spellings) and the validation rules."""

import pytest

import cep
from cep.errors import AnnotationError, DuplicateDefinitionError, UnknownAttributeError

S = "define stream S (a int, k string);\n"
Q = "from S select a insert into Out;"


def test_plan_annotations_both_spellings():
    plan = cep.compile(
        "@Plan:name('P1')\n@Plan:description('two words')\n@Plan:playback\n"
        "@Plan:dist(receiverParallelism='3', publisherParallelism='0')\n" + S + Q
    )
    assert plan.name == "P1" and plan.description == "two words" and plan.playback
    assert plan.plan_dist("receiverParallelism") == 3
    assert plan.plan_dist("publisherParallelism") == 1
    plan = cep.compile("@App:name('P2')\n@app:playback(idle.time = '100 millisecond')\n" + S + Q)
    assert plan.name == "P2" and plan.playback
    assert plan.plan_annotation("playback").get("idle.time") == "100 millisecond"


def test_query_names_and_dist():
    plan = cep.compile(
        S
        + "@info(name = 'q1') @dist(parallel = '4', execGroup = 'g1')\n"
        + Q
        + "\n@name('q2')\n"
        + Q
    )
    q1, q2 = plan.queries
    assert (q1.name, q2.name) == ("q1", "q2")
    dist = q1.annotations[1]
    assert dist.get("parallel") == "4" and dist.get("execgroup") == "g1"


def test_nested_source_sink_annotations():
    plan = cep.compile(
        "@source(type='http', receiver.url='http://x:8080/s', "
        "@map(type='json', @attributes(a='$.a', k='$.k')))\n"
        "@sink(type='log')\n" + S + Q
    )
    source, sink = plan.stream("S").annotations
    assert source.get("receiver.url") == "http://x:8080/s"
    (mapping,) = source.annotations
    assert mapping.name == "map" and mapping.get("type") == "json"
    assert mapping.annotations[0].get("a") == "$.a"
    assert sink.get("type") == "log"


def test_table_index_annotations():
    plan = cep.compile(
        S + "@IndexBy('k')\ndefine table T (k string, v double);\n"
        "@PrimaryKey('k', 'v')\ndefine table U (k string, v double);\n" + Q
    )
    assert plan.table("T").annotations[0].value == "k"
    assert [v for _, v in plan.table("U").annotations[0].elements] == ["k", "v"]
    with pytest.raises(UnknownAttributeError):
        cep.compile(S + "@IndexBy('z')\ndefine table T (k string);\n" + Q)


def test_require_plan_name():
    plan = cep.compile(S + Q)
    with pytest.raises(AnnotationError):
        cep.require_plan_name(plan)
    assert cep.require_plan_name(cep.compile("@Plan:name('X')\n" + S + Q)) == "X"


@pytest.mark.parametrize(
    "plan,words",
    [
        ("@Plan:name('has space')\n" + S + Q, "whitespace"),
        ("@Plan:name('')\n" + S + Q, "whitespace"),
        ("@Plan:nmae('x')\n" + S + Q, "unknown plan annotation"),
        ("@Plan:name('a')\n@Plan:name('b')\n" + S + Q, "twice"),
        ("@Plan:dist(receiverParallelism='many')\n" + S + Q, "whole number"),
        ("@Import('S')\n" + S + Q, "name:version"),
        ("@Import('S:1.0')\n" + S + Q, "name:version"),
        ("@Export('bad name:1.0.0')\n" + S + Q, "name:version"),
        ("@Import('S:1.0.0')\n@Export('S:1.0.0')\n" + S + Q, "both imported and exported"),
        ("@source(url='x')\n" + S + Q, "type"),
        (S + "@dist(parallel='x')\n" + Q, "whole number"),
        (S + "@dist(execGroup='my group')\n" + Q, "whitespace"),
        (
            S
            + "@dist(parallel='2', execGroup='g')\n"
            + Q
            + "\n@dist(parallel='3', execGroup='g')\n"
            + Q,
            "share one parallelism",
        ),
        (S + "partition with (k of S) begin @dist(parallel='2') " + Q + " end;", "partition"),
        (S + "@purge(enable='maybe') partition with (k of S) begin " + Q + " end;", "enable"),
        (S + "@purge(interval='soon') partition with (k of S) begin " + Q + " end;", "time"),
        (S + Q + "\n@info(name='dangling')", "not followed"),
    ],
)
def test_annotation_rules(plan, words):
    with pytest.raises(AnnotationError) as info:
        cep.compile(plan)
    assert words in info.value.message
    assert info.value.span is not None and info.value.span.line >= 1


def test_dist_group_members_with_same_parallel_and_zero_means_one():
    cep.compile(S + "@dist(parallel='0', execGroup='g')\n" + Q + "\n@dist(execGroup='g')\n" + Q)


def test_duplicate_query_names():
    with pytest.raises(DuplicateDefinitionError):
        cep.compile(S + "@info(name='q')\n" + Q + "\n@name('q')\n" + Q)
