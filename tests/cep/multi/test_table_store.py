"""The in-memory table: unique key index, duplicates, delete/update/upsert, membership."""

import pytest

from cep.engine.table.keys import equi_split
from cep.engine.table.store import Table
from cep.errors import AnnotationError
from cep.model import Annotation, Attribute, AttrType, CompareOp, TableDefinition, Variable
from cep.model.expressions import And

K_EQ = lambda t, r: t[0] == r[0]  # noqa: E731


def table(indexed=None, annotation="IndexBy"):
    anns = (Annotation(annotation, elements=((None, indexed),)),) if indexed else ()
    return Table(
        TableDefinition(
            "Tab", (Attribute("k", AttrType.STRING), Attribute("v", AttrType.DOUBLE)), anns
        )
    )


def test_unindexed_keeps_duplicates_in_insertion_order():
    t = table()
    t.insert([("a", 1.0), ("a", 2.0), ("b", 3.0), ("a", 4.0)])
    assert t.matching(("a",), K_EQ) == [("a", 1.0), ("a", 2.0), ("a", 4.0)]


@pytest.mark.parametrize("ann", ["IndexBy", "PrimaryKey"])
def test_unique_key_last_write_wins_and_uses_the_key(ann):
    t = table("k", ann)
    t.insert([("a", 1.0), ("b", 2.0), ("a", 3.0)])
    assert len(t) == 2
    calls = []

    def cond(tr, r):
        calls.append(tr)
        return tr[0] == r[0]

    assert t.matching(("a",), cond, key=lambda r: r[0]) == [("a", 3.0)]
    assert calls == [("a", 3.0)]  # only the key's row was looked at, not a scan


def test_delete_by_key_and_by_scan():
    t = table("k")
    t.insert([("a", 1.0), ("b", 2.0)])
    t.delete([("a",)], K_EQ, key=lambda r: r[0])
    assert t.all_rows() == [("b", 2.0)]
    u = table()
    u.insert([("a", 1.0), ("b", 2.0), ("a", 3.0)])
    u.delete([("a",)], K_EQ)
    assert u.all_rows() == [("b", 2.0)]


def test_update_rewrites_every_match_and_never_inserts():
    t = table()
    t.insert([("a", 1.0), ("a", 2.0), ("b", 3.0)])
    t.update([("a", 9.0), ("z", 7.0)], K_EQ, lambda tr, r: (tr[0], r[1]))
    assert t.all_rows() == [("a", 9.0), ("a", 9.0), ("b", 3.0)]


def test_upsert_updates_or_inserts_when_condition_fails():
    t = table()
    cond = lambda tr, r: tr[0] == r[0] and tr[1] < r[1]  # noqa: E731
    for r in [("a", 10.0), ("a", 30.0), ("a", 20.0)]:
        t.update([r], cond, lambda tr, r: (tr[0], r[1]), insert_row=lambda r: r)
    assert t.all_rows() == [("a", 30.0), ("a", 20.0)]


def test_contains():
    t = table("k")
    t.insert([("a", 1.0), ("b", 5.0)])
    assert t.contains(("a",), K_EQ, key=lambda r: r[0])
    assert not t.contains(("c",), K_EQ, key=lambda r: r[0])
    assert t.contains((4.0,), lambda tr, r: tr[1] > r[0])
    assert not t.contains((5.0,), lambda tr, r: tr[1] > r[0])


def test_compound_index_is_rejected_with_the_table_name():
    with pytest.raises(AnnotationError, match="Tab"):
        Table(
            TableDefinition(
                "Tab",
                (Attribute("k", AttrType.STRING),),
                (Annotation("IndexBy", elements=((None, "k"), (None, "v"))),),
            )
        )
    with pytest.raises(AnnotationError, match="no attribute q"):
        table("q")


def test_snapshot_round_trip():
    t = table("k")
    t.insert([("a", 1.0), ("b", 2.0)])
    u = table("k")
    u.set_state(t.get_state())
    assert u.all_rows() == t.all_rows()


def test_equi_split_finds_the_key_pair():
    tk, sk, sv = Variable("k", "Tab"), Variable("k"), Variable("v")
    side = lambda v: "T" if v.stream == "Tab" else "S"  # noqa: E731
    expr = And(CompareOp("==", sk, tk), CompareOp("<", Variable("v", "Tab"), sv))
    pairs, rest = equi_split(expr, side, probe="S", stored="T")
    assert pairs == [(tk, sk)] and rest == [CompareOp("<", Variable("v", "Tab"), sv)]
