"""Bad input the attacker tried, at the manager's REST API and the worker's HTTP receiver: each
gets a clear 4xx JSON answer (never a 500, an HTML page, a data path or a trace)."""

import json
import math
import urllib.error
import urllib.request

import pytest

from publishers.base import batch_json_lines, event_json
from publishers.sinks import build_sink
from receivers.http_receiver import HttpServer, create_app
from receivers.limits import ReceiverLimits, json_depth

PLAN = (
    "@Plan:name('{name}')\ndefine stream S (a int);\n"
    "@info(name='q') from S#window.length(10) select a insert into O;\n"
)


def strict_json(text):
    """json.loads that refuses NaN/Infinity, as every JSON parser but Python's does."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


# -- manager REST -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "tenant",
    ["%D9%A3", "1_0", "9" * 30, "2147483648", "-2147483649", "%207", "+7", "0x10", "1.0", "--1"],
)
def test_bad_tenant_ids_are_400(client, tenant):
    resp = client.get(f"/api/v1/tenants/{tenant}/plans")
    assert resp.status_code == 400 and resp.is_json, resp.data[:200]
    assert resp.get_json()["error"] == "BadTenantError"


@pytest.mark.parametrize("tenant", ["-2147483648", "2147483647", "-1234", "0"])
def test_tenant_ids_in_range_are_taken(client, tenant):
    assert client.get(f"/api/v1/tenants/{tenant}/plans").status_code == 200


def test_300_character_name_is_400_with_a_clear_message(client, tmp_path):
    resp = client.post(
        "/api/v1/tenants/-1234/plans", data=PLAN.format(name="a" * 300), content_type="text/plain"
    )
    body = resp.get_json()
    assert resp.status_code == 400 and "(300 characters)" in body["message"]
    assert "1 to 100" in body["message"] and body["line"] == 1
    assert str(tmp_path) not in resp.get_data(as_text=True)
    assert client.get("/api/v1/tenants/-1234/plans/" + "a" * 300).status_code == 400


@pytest.mark.parametrize("name", ["..", "."])
def test_dot_names_rejected(client, name):
    resp = client.post(
        "/api/v1/tenants/-1234/plans", data=PLAN.format(name=name), content_type="text/plain"
    )
    assert resp.status_code == 400 and "starting with a letter" in resp.get_json()["message"]
    assert client.delete(f"/api/v1/tenants/-1234/plans/{name}").status_code in (400, 404, 405)


def test_100000_deep_json_body_is_400_json(client):
    body = "[" * 100_000 + "]" * 100_000
    resp = client.post("/api/v1/tenants/-1234/plans", data=body, content_type="application/json")
    assert resp.status_code == 400 and resp.is_json and "deep" in resp.get_json()["message"]


def test_too_large_body_is_413_json_with_the_limit(client, manager):
    limit = manager.settings["http.max_body_bytes"]
    resp = client.post(
        "/api/v1/tenants/-1234/plans", data=b"x" * (limit + 1), content_type="text/plain"
    )
    assert resp.status_code == 413 and resp.is_json
    assert str(limit) in resp.get_json()["message"]


def test_unexpected_error_is_500_json_without_details(client, manager, monkeypatch):
    def boom(tenant):
        raise OSError("/very/secret/data/path: disk on fire")

    monkeypatch.setattr(manager.plans, "list", boom)
    resp = client.get("/api/v1/tenants/-1234/plans")
    assert resp.status_code == 500 and resp.is_json
    assert "/very/secret" not in resp.get_data(as_text=True)
    assert "Traceback" not in resp.get_data(as_text=True)


def test_store_error_does_not_show_the_data_path(client, manager, monkeypatch, tmp_path):
    from manager.exceptions import StoreError

    def fail(tenant, name, text):
        raise StoreError(f"cannot write plan {name!r} to {tmp_path}/data/x: No space left")

    monkeypatch.setattr(manager.store, "save", fail)
    resp = client.post(
        "/api/v1/tenants/-1234/plans", data=PLAN.format(name="P"), content_type="text/plain"
    )
    assert resp.status_code == 500 and str(tmp_path) not in resp.get_data(as_text=True)


@pytest.mark.parametrize(
    "text, message, line",
    [
        (
            "@Plan:name('L')\ndefine stream S (a int);\nfrom S#window.length(10001) select a "
            "insert into O;\n",
            "limits.window_length",
            3,
        ),
        (
            "@Plan:name('L')\ndefine stream S (a int);\nfrom S#window.time(2 hours) select a "
            "insert into O;\n",
            "limits.window_secs",
            3,
        ),
        (
            "@Plan:name('L')\ndefine stream S (a int);\n"
            "from S#window.timeLength(1 sec, 20000) select a insert into O;\n",
            "limits.window_length",
            3,
        ),
        (
            "@Plan:name('L')\ndefine stream S (a int);\n" + "from S select a insert into O;\n" * 21,
            "limits.queries",
            23,
        ),
    ],
)
def test_limits_are_400_with_position(client, text, message, line):
    resp = client.post("/api/v1/tenants/-1234/plans", data=text, content_type="text/plain")
    body = resp.get_json()
    assert resp.status_code == 400 and message in body["message"] and body["line"] == line, body


def test_plan_size_limit(client, manager):
    manager.plans.policy = manager.plans.policy.__class__(plan_bytes=200)
    text = PLAN.format(name="Big") + "-- padding\n" * 30
    resp = client.post("/api/v1/tenants/-1234/plans", data=text, content_type="text/plain")
    assert resp.status_code == 400 and "limits.plan_bytes" in resp.get_json()["message"]


# -- worker HTTP receiver ---------------------------------------------------------------
@pytest.fixture
def receiver(router):
    limits = ReceiverLimits(
        max_body_bytes=4096, max_json_depth=8, max_events=5, ingest_keys={7: "s3cret"}
    )
    srv = HttpServer(create_app(router, limits=limits)).start()
    yield srv
    srv.stop()


def post(url, data, headers=None):
    req = urllib.request.Request(url, data=data, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


EVENT = b'{"timestamp": 1, "data": ["IBM", 1.0, 2, 3, true]}'


def test_receiver_body_cap_is_413_json(receiver):
    status, headers, body = post(
        f"{receiver.url}/events/1/StockAnalysis/StockStream", b"[" + b",".join([EVENT] * 200) + b"]"
    )
    assert status == 413 and headers["Content-Type"] == "application/json"
    assert "4096 bytes" in json.loads(body)["message"]


def test_receiver_depth_cap_is_400(receiver):
    deep = b'{"timestamp": 1, "data": ["IBM", 1.0, 2, 3, ' + b"[" * 9 + b"]" * 9 + b"]}"
    status, _, body = post(f"{receiver.url}/events/1/StockAnalysis/StockStream", deep)
    assert status == 400 and "deeper than 8" in json.loads(body)["error"]


def test_receiver_events_cap_is_413(receiver):
    status, _, body = post(
        f"{receiver.url}/events/1/StockAnalysis/StockStream", b"[" + b",".join([EVENT] * 6) + b"]"
    )
    assert status == 413 and "at most 5" in json.loads(body)["error"]


@pytest.mark.parametrize("tenant", ["%D9%A3", "1_0", "9" * 30, "t1"])
def test_receiver_bad_tenant_is_400(receiver, tenant):
    status, _, body = post(f"{receiver.url}/events/{tenant}/StockAnalysis/StockStream", EVENT)
    assert status == 400 and "tenant id" in json.loads(body)["error"]


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({}, 401),
        ({"X-CEP-Ingest-Key": "wrong"}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Basic s3cret"}, 401),
        ({"X-CEP-Ingest-Key": "s3cret"}, 404),
        ({"Authorization": "Bearer s3cret"}, 404),
    ],
)
def test_ingest_key(receiver, headers, expected):
    """Tenant 7 has a key: without it 401 (before the stream is even looked up); with it the
    request goes on (404 here: no plan of tenant 7 is served)."""
    status, resp_headers, body = post(
        f"{receiver.url}/events/7/StockAnalysis/StockStream", EVENT, headers
    )
    assert status == expected and json.loads(body)
    if expected == 401:
        assert resp_headers["WWW-Authenticate"].startswith("Bearer")


def test_tenant_without_key_needs_none(receiver, recorder):
    status, _, _ = post(f"{receiver.url}/events/1/StockAnalysis/StockStream", EVENT)
    assert status == 200 and len(recorder.events) == 1


@pytest.mark.parametrize(
    "method, path", [("GET", "/nope"), ("PUT", "/events/1/a/b"), ("GET", "/events/1/a/b")]
)
def test_receiver_errors_are_json(receiver, method, path):
    req = urllib.request.Request(
        receiver.url + path, method=method, data=b"" if method == "PUT" else None
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.headers["Content-Type"] == "application/json"
    assert "message" in json.loads(info.value.read())


@pytest.mark.parametrize(
    "value, depth",
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'["]]]]", "[[[["]', 1),
        (b'["\\"[[["]', 1),
        (b'["\\\\", [[]]]', 3),
    ],
)
def test_json_depth(value, depth):
    assert json_depth(value, 32) == depth


# -- NaN and infinities in JSON sinks ---------------------------------------------------
NAN_EVENTS = [(1, ["a", math.nan, 1]), (2, ["b", math.inf, -math.inf]), (3, ["c", 1.5, [math.nan]])]


def test_json_lines_write_nan_as_null():
    lines = batch_json_lines("S", NAN_EVENTS).splitlines()
    assert [strict_json(x)["data"] for x in lines] == [
        ["a", None, 1],
        ["b", None, None],
        ["c", 1.5, [None]],
    ]
    assert strict_json(event_json("S", 1, (math.nan,)))["data"] == [None]
    assert batch_json_lines("S", [(1, [1.5])]) == '{"stream": "S", "timestamp": 1, "data": [1.5]}\n'


def test_file_sink_writes_valid_json(tmp_path):
    sink = build_sink({"type": "file", "options": {"path": str(tmp_path / "o.jsonl")}}, "S")
    sink.write_batch(NAN_EVENTS)
    sink.close()
    rows = [strict_json(x)["data"] for x in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert rows[1] == ["b", None, None]


def test_redis_sink_writes_valid_json(redis_db):
    import redis

    sink = build_sink({"type": "redis", "options": {"url": redis_db, "key": "k"}}, "S")
    sink.write_batch(NAN_EVENTS)
    client = redis.Redis.from_url(redis_db)
    entries = client.xrange("k")
    assert [strict_json(fields[b"data"]) for _, fields in entries][0] == ["a", None, 1]
    sink.close()
    client.close()


@pytest.mark.parametrize("tenant", [10**29, 2**31, -(2**31) - 1])
def test_worker_refuses_deployments_of_out_of_range_tenants(tenant):
    from cep.worker.exceptions import DeploymentFormatError
    from cep.worker.plans import spec_from_deployment

    with pytest.raises(DeploymentFormatError, match="outside the 32-bit range"):
        spec_from_deployment({"tenant": tenant, "name": "P", "imported": [], "exported": []})
    assert spec_from_deployment({"tenant": -(2**31), "name": "P"}).tenant == -(2**31)
