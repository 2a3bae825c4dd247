"""The same plan with its tables in memory, in SQLite and in PostgreSQL gives the output the
real Siddhi 3.2.15 gave for the in-memory plan (cases/enrich.yaml, made by
gen_enrich_case.py): joins (inner, left outer), `in`, and insert into / update / delete /
update or insert all go through the one table interface.

Rows one event joins with are compared as a set: Siddhi 3.2 scans an `@IndexBy` table in its
hash map's order, this engine in insertion order (on every backend)."""

import json
import os

import pytest
import yaml

from tests.conformance.conformance import run_in_process

CASE = os.path.join(os.path.dirname(__file__), "cases", "enrich.yaml")


def _case(backend, cache):
    with open(CASE) as f:
        case = yaml.safe_load(f)
    if backend == "memory":
        prices = trades = ""
    else:
        ds = "default" if backend == "sqlite" else "pg"
        extra = f", cache='{cache}', cache.size='3'" if cache else ""
        prices = f"@from(eventtable='rdbms', datasource.name='{ds}', table.name='prices'{extra})\n"
        trades = f"@store(type='rdbms', datasource='{ds}', table.name='trades'{extra})\n"
    case["plan"] = case.pop("plan_template").format(prices=prices, trades=trades)
    return case


def _normal(events):
    """Events in timestamp order, those of one timestamp sorted by value."""
    return sorted((e["timestamp"], json.dumps(e["data"])) for e in events)


def _check(case, tmp_path):
    code, out, err = run_in_process(case, tmp_path)
    assert code == 0, err
    got = {}
    for line in out.splitlines():
        event = json.loads(line)
        assert not event.get("expired")
        got.setdefault(event["stream"], []).append(event)
    assert set(got) == set(case["expect"])
    for stream, want in case["expect"].items():
        assert _normal(got[stream]) == _normal(want), stream
        # the order of timestamps is the same too (the sort above only reorders within one)
        assert [e["timestamp"] for e in got[stream]] == [e["timestamp"] for e in want]


def test_in_memory_tables_match_siddhi(tmp_path):
    _check(_case("memory", None), tmp_path)


@pytest.mark.parametrize("cache", [None, "basic", "LRU", "LFU"])
def test_sqlite_tables_match_siddhi(cache, datasources, tmp_path):
    datasources()
    _check(_case("sqlite", cache), tmp_path)


@pytest.mark.parametrize("cache", [None, "LRU"])
def test_postgresql_tables_match_siddhi(cache, datasources, pg_database, tmp_path):
    datasources({"pg": {"url": pg_database}})
    _check(_case("postgres", cache), tmp_path)
