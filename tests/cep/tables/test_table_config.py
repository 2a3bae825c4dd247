"""Table types and options are checked with positioned errors (never a silent in-memory
table), datasources come from the operator's file, and a plan may name only the datasources
its tenant may use."""

import pytest
import sqlalchemy

import cep
from cep.engine.table.rdbms import RdbmsTable
from cep.errors import AnnotationError
from cep.policy import HostPolicy, check_plan
from cep.policy.datasources import load_datasources
from cep.policy.exceptions import PlanPolicyError, PolicyViolation
from tests.cep.engine.helpers import runtime

STREAM = "define stream S (k string, v int);\n"


def _table(annotation, attrs="k string, v int"):
    return STREAM + f"{annotation}\ndefine table T ({attrs});\nfrom S insert into T;\n"


@pytest.mark.parametrize(
    "annotation, words",
    [
        ("@from(eventtable='hazelcast', cluster.name='cep')", "Hazelcast"),
        ("@from(eventtable='cassandra')", "not supported"),
        ("@from(eventtable='excel')", "unknown table type eventtable='excel'"),
        ("@store(type='mongo')", "unknown table type type='mongo'"),
        ("@from(datasource.name='x')", "needs eventtable='rdbms'"),
        ("@from(eventtable='rdbms', colour='red')", "unknown option 'colour'"),
        (
            "@store(type='rdbms', jdbc.url='jdbc:mysql://db/x', password='s3cret')",
            "credentials belong in the operator's datasources file",
        ),
        ("@from(eventtable='rdbms', cache='MRU')", "not one of basic, LRU, LFU"),
        ("@from(eventtable='rdbms', cache='LRU', cache.size='lots')", "positive whole number"),
        ("@from(eventtable='rdbms', table.name='x; drop table y')", "not a plain name"),
        ("@from(eventtable='rdbms', cache.validity.period='soon')", "is not a time"),
    ],
)
def test_unknown_table_types_and_options_are_positioned_errors(annotation, words):
    with pytest.raises(AnnotationError) as e:
        cep.compile(_table(annotation))
    assert words in str(e.value)
    assert (e.value.span.line, e.value.span.column) == (2, 1)


def test_an_object_attribute_cannot_live_in_a_database():
    with pytest.raises(AnnotationError, match="attribute 'o' is of type object"):
        cep.compile(STREAM + "@from(eventtable='rdbms')\ndefine table T (k string, o object);")


def test_an_rdbms_table_is_a_database_table_and_rows_go_to_the_default_sqlite(
    datasources, tmp_path
):
    datasources()
    rt = runtime(_table("@from(eventtable='rdbms', table.name='kv')"))
    assert isinstance(rt.tables["T"], RdbmsTable)
    rt.input_handler("S").send(("a", 1), 1)
    rt.shutdown()
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path}/default.sqlite")
    with engine.connect() as c:
        assert c.execute(sqlalchemy.text("select k, v from kv")).all() == [("a", 1)]
    engine.dispose()


def test_an_unconfigured_datasource_is_a_positioned_error_when_the_plan_starts(datasources):
    datasources()
    with pytest.raises(AnnotationError) as e:
        runtime(_table("@from(eventtable='rdbms', datasource.name='nowhere')"))
    assert "no datasource named 'nowhere'" in str(e.value) and e.value.span.line == 2


def test_an_existing_database_table_without_an_attribute_column_is_refused(datasources, tmp_path):
    datasources()
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path}/default.sqlite")
    with engine.begin() as c:
        c.execute(sqlalchemy.text("create table legacy (k text, other int)"))
    engine.dispose()
    with pytest.raises(AnnotationError, match="'legacy' has no column v"):
        runtime(_table("@from(eventtable='rdbms', table.name='legacy')"))


def test_an_existing_table_without_the_order_column_is_used_as_it_is(datasources, tmp_path):
    datasources()
    engine = sqlalchemy.create_engine(f"sqlite:///{tmp_path}/default.sqlite")
    with engine.begin() as c:
        c.execute(sqlalchemy.text("create table legacy (K text, V int, extra text)"))
        c.execute(sqlalchemy.text("insert into legacy values ('z', 26, 'kept')"))
    engine.dispose()
    rt = runtime(_table("@from(eventtable='rdbms', table.name='legacy')"))
    rt.input_handler("S").send(("a", 1), 1)
    assert sorted(rt.tables["T"].all_rows()) == [("a", 1), ("z", 26)]
    rt.shutdown()


def test_a_tenant_may_name_only_its_datasources(datasources):
    datasources(
        {
            "shared": {"url": "sqlite:///var/shared.sqlite", "tenants": ["*"]},
            "acme_db": {"url": "postgresql+psycopg://cep@db:5432/acme", "tenants": ["acme"]},
        }
    )
    plan = cep.compile(_table("@from(eventtable='rdbms', datasource.name='acme_db')"))
    check_plan(plan, HostPolicy(), "acme")
    with pytest.raises(PlanPolicyError) as e:
        check_plan(plan, HostPolicy(), "globex")
    assert "tenant 'globex' may not use datasource 'acme_db'" in str(e.value)
    assert e.value.span.line == 2
    check_plan(
        cep.compile(_table("@store(type='rdbms', datasource='shared')")), HostPolicy(), "globex"
    )
    with pytest.raises(PlanPolicyError, match="no datasource named 'other'"):
        check_plan(
            cep.compile(_table("@from(eventtable='rdbms', datasource.name='other')")),
            HostPolicy(),
            "acme",
        )


def test_datasources_file_rules(tmp_path, monkeypatch):
    conf = tmp_path / "conf"
    conf.mkdir()
    path = conf / "datasources.yaml"
    path.write_text("datasources:\n  rel:\n    url: sqlite:///var/x.sqlite\n")
    found = load_datasources(path)
    assert found["rel"].url == f"sqlite:///{tmp_path}/var/x.sqlite"  # under the CEP home
    assert found["default"].url == f"sqlite:///{tmp_path}/var/tables/default.sqlite"
    path.write_text("datasources:\n  pg:\n    url: postgresql://cep:pw@db/cep\n")
    with pytest.raises(PolicyViolation, match="holds a password"):
        load_datasources(path)
    path.write_text(
        "datasources:\n  pg:\n    url: postgresql+psycopg://cep@db/cep\n"
        "    password_env: CEP_TEST_PG_PASSWORD\n"
    )
    ds = load_datasources(path)["pg"]
    monkeypatch.delenv("CEP_TEST_PG_PASSWORD", raising=False)
    with pytest.raises(PolicyViolation, match="CEP_TEST_PG_PASSWORD"):
        ds.connect_url()
    monkeypatch.setenv("CEP_TEST_PG_PASSWORD", "from-env")
    assert ds.connect_url().password == "from-env"
    path.write_text("datasources:\n  pg:\n    url: postgresql://db/cep\n    colour: red\n")
    with pytest.raises(PolicyViolation, match="unknown keys colour"):
        load_datasources(path)
