"""Issue 10, property-based (hypothesis): random credentials (Authorization, session cookies,
cluster-secret and CSRF headers) on every route, and random login, user, tenant and token
bodies: never a 5xx, never a traceback, never a path, and never let in without real
credentials."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.security.auth_fixtures import app, people  # noqa: F401 (fixtures)

SETTINGS = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PRINTABLE = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=120)
BEARER = st.one_of(
    PRINTABLE,
    PRINTABLE.map(lambda t: "Bearer " + t),
    PRINTABLE.map(lambda t: "Bearer cep_" + t),
    st.sampled_from(
        ["Bearer", "Bearer ", "bearer cep__", "Basic YWRtaW46eA==", "Bearer cep_" + "a" * 300]
    ),
)
CREDENTIALS = st.fixed_dictionaries(
    {},
    optional={
        "Authorization": BEARER,
        "X-CEP-Cluster-Secret": PRINTABLE,
        "X-CSRF-Token": PRINTABLE,
        "Cookie": PRINTABLE.map(lambda t: "cep_session=" + t),
    },
)
ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
FIELDS = st.dictionaries(
    st.sampled_from(["user", "password", "name", "tenant", "role", "id", "label"]), ANY, max_size=6
)


def clean(resp):
    text = resp.get_data(as_text=True)
    assert resp.status_code < 500, (resp.status_code, text[:300])
    assert "Traceback" not in text and 'File "' not in text and "/tmp/" not in text
    return resp


def routes(app):
    out = []
    for rule in app.url_map.iter_rules():
        url = rule.rule.replace("<path:filename>", "console/console.css")
        for arg in rule.arguments:
            url = url.replace(f"<path:{arg}>", "x").replace(f"<{arg}>", "-1234")
        out += [(rule.endpoint, m, url) for m in sorted(rule.methods - {"HEAD", "OPTIONS"})]
    return out


# the documentation site is public (the project's own docs)
PUBLIC = {"static", "favicon", "root", "console_auth.login", "api_users.login", "docs_site.page"}


@SETTINGS
@given(headers=CREDENTIALS, pick=st.integers(0, 10**6))
def test_random_credentials_never_get_in_and_never_break(people, app, headers, pick):
    endpoint, method, url = sorted(routes(app))[pick % len(routes(app))]
    resp = clean(people.anon.open(url, method=method, headers=headers, json={}))
    if endpoint not in PUBLIC:
        assert resp.status_code in (302, 401), (endpoint, method, resp.status_code)


@settings(SETTINGS, max_examples=50)  # each login runs scrypt (~0.15 s)
@given(body=FIELDS, raw=st.binary(max_size=300), as_json=st.booleans())
def test_random_login_bodies(people, body, raw, as_json):
    if as_json:
        resp = clean(people.anon.post("/api/v1/login", json=body))
    else:
        resp = clean(people.anon.post("/api/v1/login", data=raw, content_type="application/json"))
    assert resp.status_code in (400, 401, 429) and resp.is_json  # 429: throttled name
    form = {k: json.dumps(v) for k, v in body.items()}
    assert clean(people.anon.post("/console/login", data=form)).status_code in (400, 403)


@SETTINGS
@given(
    body=FIELDS,
    which=st.sampled_from(
        ["/api/v1/users", "/api/v1/tenants", "/api/v1/tokens", "/api/v1/users/admin5/password"]
    ),
)
def test_random_admin_bodies(people, body, which):
    method = "PUT" if which.endswith("password") else "POST"
    resp = clean(people.admin.open(which, method=method, json=body))
    assert resp.is_json
    if resp.status_code == 201 and which == "/api/v1/users":  # keep the user list small
        people.admin.delete(f"/api/v1/users/{resp.get_json()['name']}")
