"""Turning the query plan log on: `cep manager --log-query-plans` or CEP_LOG_QUERY_PLANS=1 put
`manager.topology_manager` at DEBUG, so each deployed plan's XML is logged; CEP_LOG_CONFIG
names a logging YAML as --log-config does."""

import logging

import pytest

from cep.cli.main import build_parser
from cep.cli.manager import enable_query_plan_log
from tests.manager.manager_plans import STAT_PLAN, STAT_XML
from tests.manager.test_manager_api import client, manager  # noqa: F401 - shared fixtures

LOGGER = "manager.topology_manager"


@pytest.fixture
def restore_level():
    logger = logging.getLogger(LOGGER)
    level = logger.level
    yield logger
    logger.setLevel(level)


@pytest.mark.parametrize(
    "argv,env,expected",
    [
        (["manager"], {}, False),
        (["manager", "--log-query-plans"], {}, True),
        (["manager"], {"CEP_LOG_QUERY_PLANS": "1"}, True),
    ],
)
def test_flag_and_environment_variable(monkeypatch, argv, env, expected):
    monkeypatch.delenv("CEP_LOG_QUERY_PLANS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert build_parser().parse_args(argv).log_query_plans is expected


def test_log_config_from_environment(monkeypatch):
    monkeypatch.setenv("CEP_LOG_CONFIG", "conf/logging.yaml")
    assert build_parser().parse_args(["manager"]).log_config == "conf/logging.yaml"


def test_enabled_log_shows_the_xml_of_a_deployed_plan(client, caplog, restore_level, monkeypatch):
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.WARNING)  # as `cep` leaves the root logger
    client.post(
        "/api/v1/tenants/-1234/plans", data=STAT_PLAN.replace("'StatExecutionPlan'", "'Before'")
    )
    assert not [r for r in caplog.records if "Query plan of" in r.getMessage()]
    enable_query_plan_log()
    assert restore_level.getEffectiveLevel() == logging.DEBUG
    client.post("/api/v1/tenants/-1234/plans", data=STAT_PLAN)
    records = [r for r in caplog.records if r.name == LOGGER and "Query plan of" in r.getMessage()]
    assert records and records[0].getMessage() == (
        "Query plan of StatExecutionPlan[-1234]:\n" + STAT_XML
    )
