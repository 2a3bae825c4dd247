"""Property-based tests (hypothesis): random bodies, names, tenant ids and headers against every
/api route of the manager (Flask test client, routes taken from the app's URL map) and against
the worker's HTTP receiver. Never a 500, never a traceback or a filesystem path, always JSON.
JSON depth measured without parsing agrees with the parsed depth."""

import json
import string
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from receivers.http_receiver import create_app as receiver_app
from receivers.limits import ReceiverLimits, json_depth

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TENANTS = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.text(max_size=40),
    st.sampled_from(["-1234", "٣", "1_0", "9" * 30, "..", "%2e%2e", "-0"]),
)
NAMES = st.one_of(
    st.text(max_size=300),
    st.text(string.ascii_letters + "._-", max_size=120),
    st.sampled_from(["..", ".", "a" * 300, "StockAnalysis", "x/y", "%00"]),
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
BODIES = st.one_of(
    st.binary(max_size=2000),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.integers(1, 2000).map(lambda n: b"[" * n + b"]" * n),
    st.text(max_size=2000).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from(
        [
            b"@Plan:name('P')\ndefine stream S (a int);\nfrom S select a insert into O;",
            b'{"text": 5}',
            b'{"text": "@Plan:name(\'..\')"}',
        ]
    ),
)
HEADERS = st.dictionaries(
    st.sampled_from(
        [
            "Content-Type",
            "Authorization",
            "X-CEP-Ingest-Key",
            "If-None-Match",
            "Accept",
            "X-Forwarded-For",
        ]
    ),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60),
    max_size=4,
)
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "",
    ]
)


def assert_clean(resp, forbidden):
    text = resp.get_data(as_text=True)
    assert resp.status_code < 500, (resp.status_code, text[:300])
    if resp.status_code >= 400 or resp.mimetype == "application/json":
        assert resp.is_json, (resp.status_code, resp.mimetype, text[:300])
        json.loads(text)
    assert "Traceback" not in text and 'File "' not in text
    for path in forbidden:
        assert path not in text, (path, text[:300])


def api_rules(app):
    return sorted(
        (r for r in app.url_map.iter_rules() if r.rule.startswith("/api/")), key=lambda r: r.rule
    )


@pytest.fixture
def api(client, tmp_path):
    import os

    return client, client.application, [str(tmp_path), os.getcwd() + "/", "/tmp/"]


def test_every_api_route_survives_random_requests(api):
    client, app, forbidden = api
    rules = api_rules(app)
    assert len(rules) >= 8, [r.rule for r in rules]

    @SETTINGS
    @given(
        rule=st.sampled_from(rules),
        data=st.data(),
        body=BODIES,
        headers=HEADERS,
        content_type=CONTENT_TYPES,
    )
    def run(rule, data, body, headers, content_type):
        values = {
            arg: data.draw(TENANTS if arg == "tenant" else NAMES, label=arg)
            for arg in rule.arguments
        }
        path = rule.rule
        for arg, value in values.items():
            path = path.replace(f"<{arg}>", quote(value, safe="") or "x")
        method = data.draw(st.sampled_from(sorted(rule.methods - {"HEAD", "OPTIONS"})))
        query = data.draw(
            st.sampled_from(
                [
                    "",
                    "?tenant=" + quote(data.draw(TENANTS), safe=""),
                    "?window=" + quote(data.draw(NAMES), safe=""),
                ]
            )
        )
        resp = client.open(
            path + query,
            method=method,
            data=body,
            headers=headers,
            content_type=content_type or None,
        )
        assert_clean(resp, forbidden)

    run()


@pytest.fixture
def receiver(router):
    limits = ReceiverLimits(
        max_body_bytes=64 * 1024, max_json_depth=32, max_events=1000, ingest_keys={9: "key-9"}
    )
    return receiver_app(router, limits=limits).test_client()


@SETTINGS
@given(
    tenant=TENANTS,
    plan=NAMES,
    stream=NAMES,
    body=BODIES,
    headers=HEADERS,
    method=st.sampled_from(["POST", "POST", "POST", "GET", "PUT"]),
)
def test_receiver_survives_random_requests(receiver, tenant, plan, stream, body, headers, method):
    path = "/events/" + "/".join(quote(x, safe="") or "x" for x in (tenant, plan, stream))
    resp = receiver.open(path, method=method, data=body, headers=headers)
    assert_clean(resp, ["/tmp/"])


@SETTINGS
@given(body=BODIES, headers=HEADERS)
def test_receiver_known_stream_random_bodies(receiver, body, headers):
    resp = receiver.post("/events/1/StockAnalysis/StockStream", data=body, headers=headers)
    assert_clean(resp, ["/tmp/"])
    assert resp.status_code in (200, 207, 400, 413), resp.get_data(as_text=True)[:200]
    if resp.status_code == 200:  # 200 only when every event was accepted
        assert resp.get_json()["rejected"] == 0


def parsed_depth(value):
    if isinstance(value, list):
        return 1 + max((parsed_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((parsed_depth(v) for v in value.values()), default=0)
    return 0


TRICKY_TEXT = st.text(st.sampled_from('[]{}"\\ab'), max_size=12)
TRICKY = st.recursive(
    st.none() | st.integers() | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY_TEXT, inner, max_size=3),
    max_leaves=40,
)


@SETTINGS
@given(value=TRICKY, ascii_only=st.booleans())
def test_json_depth_agrees_with_the_parser(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert json_depth(text, 64) == min(parsed_depth(value), 65)


SEGMENTS = st.sampled_from(["..", ".", "a", "b", "link", "", "etc", "passwd", "a\\..", "~"])


@SETTINGS
@given(parts=st.lists(SEGMENTS, min_size=1, max_size=6), absolute=st.booleans())
def test_confine_never_returns_a_path_outside_the_root(tmp_path_factory, parts, absolute):
    """Whatever the path (relative or absolute, with '..', '.', empty parts and a symlink
    that leaves the root), confine either refuses it or returns a real path under the root."""
    import os

    from cep.policy import PolicyViolation, confine

    base = tmp_path_factory.getbasetemp() / "confine"
    root = base / "root"
    if not root.exists():
        (root / "a").mkdir(parents=True)
        (base / "outside").mkdir()
        os.symlink(base / "outside", root / "link")
    real_root = os.path.realpath(root)
    path = "/".join(parts)
    if absolute:
        path = os.path.join(real_root, path)
    try:
        out = confine(path, (real_root,))
    except PolicyViolation:
        return
    assert out.startswith(real_root + os.sep) and os.path.realpath(out) == out, (path, out)
