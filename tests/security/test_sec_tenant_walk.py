"""Tenant isolation as a property: a tenant-5 user walks every GET route and console page of
the manager (the Flask URL map, arguments filled with its own tenant's names) while tenant 6
has a plan, a stream, an endpoint and worker threads with errors; no answer may carry any of
tenant 6's names, nor a count that covers tenant 6."""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.security.auth_fixtures import app, people  # noqa: F401 (fixtures)

MINE = (
    "@Plan:name('AlphaFive')\ndefine stream FiveIn (sym string, price double);\n"
    "from FiveIn[price > 1.0] select sym insert into FiveOut;\n"
)
THEIRS = (
    "@Plan:name('SecretSix')\ndefine stream SixSecretStream (code string, v double);\n"
    "from SixSecretStream[v > 2.0] select code insert into SixSecretOut;\n"
)
SECRETS = ("SecretSix", "SixSecretStream", "SixSecretOut", "6/SecretSix")
ARGS = {
    "tenant": "5",
    "name": "AlphaFive",
    "user": "viewer5",
    "token_id": "abc",
    "rest": "nowhere",
    "filename": "console/console.css",
    "job_id": "nojob",
}


@pytest.fixture
def world(app, people, manager):
    assert (
        people.admin.post(
            "/api/v1/tenants/5/plans", data=MINE, content_type="text/plain"
        ).status_code
        == 201
    )
    assert (
        people.admin.post(
            "/api/v1/tenants/6/plans", data=THEIRS, content_type="text/plain"
        ).status_code
        == 201
    )
    manager.registry.table.report_worker(
        {
            "worker": "w1",
            "host": "127.0.0.1",
            "roles": ["receiver", "publisher"],
            "plans": ["5/AlphaFive", "6/SecretSix"],
            "eventsIn": 123456,
            "eventsOut": 654321,
            "threads": [
                {
                    "name": "inflow 6/SecretSix/SixSecretStream",
                    "state": "failed",
                    "last_error": "RuntimeError: SixSecretStream broke",
                },
                {"name": "inflow 5/AlphaFive/FiveIn", "state": "running", "last_error": None},
            ],
        }
    )
    return people


def get_routes(app):
    out = []
    for rule in app.url_map.iter_rules():
        if "GET" not in rule.methods or rule.endpoint == "static":
            continue
        url = rule.rule
        for arg in rule.arguments:
            url = url.replace(f"<{arg}>", ARGS[arg]).replace(f"<path:{arg}>", ARGS[arg])
        out.append((rule.endpoint, url))
    return out


def test_no_route_or_page_shows_a_tenant_anything_of_another(app, world):
    walked = 0
    for endpoint, url in get_routes(app):
        for client in (world.viewer5, world.admin5):
            resp = client.get(url, follow_redirects=True)
            text = resp.get_data(as_text=True)
            for secret in SECRETS:
                assert secret not in text, (endpoint, url, resp.status_code, secret)
            assert "654321" not in text and "123456" not in text, (endpoint, url)
            walked += 1
    assert walked >= 40
    mine = world.viewer5.get("/api/v1/manager").get_json()
    assert mine["plans"] == 1  # its own plan only
    workers = world.viewer5.get("/api/v1/workers").get_json()["workers"]
    assert [t["name"] for t in workers[0]["threads"]] == ["inflow 5/AlphaFive/FiveIn"]
    assert world.admin.get("/api/v1/manager").get_json()["plans"] == 2  # a super admin: all


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    endpoint_index=st.integers(0, 1000),
    query=st.sampled_from(
        ["", "?tenant=6", "?window=all", "?user=admin6", "?tenant=6&name=SecretSix"]
    ),
)
def test_query_strings_do_not_open_another_tenant(app, world, endpoint_index, query):
    routes_ = get_routes(app)
    endpoint, url = routes_[endpoint_index % len(routes_)]
    text = world.viewer5.get(url + query, follow_redirects=True).get_data(as_text=True)
    for secret in SECRETS:
        assert secret not in text, (endpoint, url + query, secret)
