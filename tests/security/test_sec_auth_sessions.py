"""Issue 10: console login, session cookies, CSRF, idle expiry and logout; API tokens; the
workers' cluster secret; the audit log; passwords never logged."""

import logging
import re
import time

from manager.web import create_app
from tests.auth_helpers import ADMIN_PASSWORD
from tests.security.auth_fixtures import PASSWORD, app, people  # noqa: F401 (fixtures)


def csrf_of(html):
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def log_in(client, user="admin", password=ADMIN_PASSWORD, next_page="/console/status"):
    page = client.get("/console/login")
    return client.post(
        "/console/login",
        data={
            "user": user,
            "password": password,
            "csrf_token": csrf_of(page.text),
            "next": next_page,
        },
    )


def test_login_sets_a_strict_httponly_session_and_logout_ends_it(app):
    client = app.test_client()
    assert client.get("/console/status").status_code == 302
    resp = log_in(client)
    assert resp.status_code == 302 and resp.headers["Location"] == "/console/status"
    cookie = resp.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" not in cookie
    page = client.get("/console/status")
    assert page.status_code == 200 and 'id="whoami"' in page.text and ">admin<" in page.text
    token = re.search(r'<meta name="csrf-token" content="([^"]+)"', page.text).group(1)
    assert client.post("/console/logout", data={"csrf_token": token}).status_code == 302
    assert client.get("/console/status").status_code == 302
    assert client.get("/api/v1/tenants/-1234/plans").status_code == 401


def test_wrong_password_is_refused_and_audited(app, manager):
    client = app.test_client()
    resp = log_in(client, password="not the password")
    assert resp.status_code == 401 and "Wrong user name or password" in resp.text
    assert client.get("/console/status").status_code == 302
    assert client.post("/api/v1/login", json={"user": "nobody", "password": "x"}).status_code == 401
    failed = [e for e in manager.auth.audit.lines() if e["action"] == "login"]
    assert [(e["user"], e["outcome"]) for e in failed] == [
        ("admin", "failed"),
        ("nobody", "failed"),
    ]


def test_a_session_write_without_the_csrf_token_is_refused(app):
    client = app.test_client()
    log_in(client)
    plan = "@Plan:name('P')\ndefine stream S (a int);\nfrom S select a insert into T;\n"
    url = "/api/v1/tenants/-1234/plans"
    refused = client.post(url, data=plan, content_type="text/plain")
    assert refused.status_code == 403 and refused.get_json()["error"] == "CsrfError"
    wrong = client.post(
        url, data=plan, content_type="text/plain", headers={"X-CSRF-Token": "guess"}
    )
    assert wrong.status_code == 403
    assert client.get(url).get_json()["plans"] == []
    token = re.search(
        r'content="([^"]+)"', client.get("/console/status").text.split('name="csrf-token"')[1]
    ).group(1)
    ok = client.post(url, data=plan, content_type="text/plain", headers={"X-CSRF-Token": token})
    assert ok.status_code == 201, ok.get_json()
    # the login form itself needs its token
    assert (
        app.test_client()
        .post("/console/login", data={"user": "admin", "password": ADMIN_PASSWORD})
        .status_code
        == 403
    )


def test_an_idle_session_expires(manager):
    manager.auth.idle_secs = 0.5
    client = create_app({"MANAGER": manager}).test_client()
    log_in(client)
    assert client.get("/console/status").status_code == 200
    time.sleep(0.7)
    resp = client.get("/console/status")
    assert resp.status_code == 302 and "/console/login" in resp.headers["Location"]


def test_login_after_redirect_goes_back_only_to_a_console_page(app):
    client = app.test_client()
    assert log_in(client, next_page="https://evil.example/").headers["Location"] == "/console/"
    assert log_in(client, next_page="//evil.example/console").headers["Location"] == "/console/"


def test_api_tokens_are_shown_once_stored_hashed_and_revocable(people, manager, tmp_path):
    created = people.viewer5.post("/api/v1/tokens", json={"label": "ci"})
    assert created.status_code == 201
    token, token_id = created.get_json()["token"], created.get_json()["id"]
    stored = (manager.auth.data_dir / "security" / "tokens.json").read_text()
    assert token not in stored and token_id in stored
    listed = people.viewer5.get("/api/v1/tokens").get_json()["tokens"]
    assert token_id in [t["id"] for t in listed] and all("token" not in t for t in listed)
    anon = people.anon
    who = anon.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"})
    assert who.get_json() == {"user": "viewer5", "tenant": 5, "role": "viewer"}
    foreign = people.admin6.delete(f"/api/v1/tokens/{token_id}")
    unknown = people.admin6.delete("/api/v1/tokens/000000000000")
    # another user's token id answers exactly as an unknown one: no existence leak
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.get_json()["message"].replace(token_id, "X") == unknown.get_json()[
        "message"
    ].replace("000000000000", "X")
    assert people.viewer5.delete(f"/api/v1/tokens/{token_id}").status_code == 200
    assert (
        anon.get("/api/v1/whoami", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    )
    assert (
        anon.get("/api/v1/whoami", headers={"Authorization": "Bearer cep_x_y"}).status_code == 401
    )


def test_password_login_gives_a_token_and_removing_a_user_revokes_it(people):
    resp = people.anon.post("/api/v1/login", json={"user": "admin5", "password": PASSWORD})
    assert resp.status_code == 201 and resp.get_json()["role"] == "tenant-admin"
    headers = {"Authorization": f"Bearer {resp.get_json()['token']}"}
    assert people.anon.get("/api/v1/tenants/5/plans", headers=headers).status_code == 200
    assert people.admin.delete("/api/v1/users/admin5").status_code == 200
    assert people.anon.get("/api/v1/tenants/5/plans", headers=headers).status_code == 401


def test_users_and_tenants_are_checked(people):
    admin = people.admin
    assert admin.post("/api/v1/users", json={"name": "u", "password": "short"}).status_code == 400
    assert (
        admin.post(
            "/api/v1/users", json={"name": "u", "password": "long enough", "tenant": 99}
        ).status_code
        == 400
    )  # no tenant 99
    assert (
        admin.post("/api/v1/users", json={"name": "u/..", "password": "long enough"}).status_code
        == 400
    )
    assert (
        admin.post(
            "/api/v1/users", json={"name": "admin5", "password": "long enough", "tenant": 5}
        ).status_code
        == 409
    )
    assert admin.post("/api/v1/tenants", json={"id": "٣"}).status_code == 400
    assert admin.post("/api/v1/tenants", json={"id": 5}).status_code == 409
    users = admin.get("/api/v1/users").get_json()["users"]
    assert {u["name"] for u in users} == {"admin", "admin5", "viewer5", "admin6"}
    assert all("password" not in u for u in users)
    tenants = [t["id"] for t in admin.get("/api/v1/tenants").get_json()["tenants"]]
    assert tenants == [-1234, 5, 6]


def test_workers_need_the_cluster_secret(people, manager):
    assert people.anon.get("/api/v1/deployments").status_code == 401
    assert (
        people.anon.get(
            "/api/v1/deployments", headers={"X-CEP-Cluster-Secret": "wrong"}
        ).status_code
        == 401
    )
    secret = {"X-CEP-Cluster-Secret": manager.auth.cluster_secret}
    assert people.anon.get("/api/v1/deployments", headers=secret).status_code == 200
    assert people.anon.get("/api/v1/manager", headers=secret).status_code == 200
    # the secret serves plan sync only
    assert people.anon.get("/api/v1/tenants/-1234/plans", headers=secret).status_code == 403
    assert (
        people.anon.post("/api/v1/tenants/-1234/plans", data="x", headers=secret).status_code == 403
    )


def test_audit_lines_for_changes_logins_and_tokens(people, manager, caplog):
    with caplog.at_level(logging.INFO, logger="manager.audit"):
        people.admin.post("/api/v1/tenants", json={"id": 8, "name": "eight"})
        people.admin5.post(
            "/api/v1/tenants/5/plans",
            data="@Plan:name('A')\ndefine stream S (a int);\nfrom S select a insert into T;\n",
            content_type="text/plain",
        )
        people.viewer5.delete("/api/v1/tenants/5/plans/A")
        people.anon.post("/api/v1/login", json={"user": "viewer5", "password": PASSWORD})
    entries = manager.auth.audit.lines()
    got = [(e["user"], e["action"], e["target"], e["outcome"]) for e in entries[-5:]]
    assert got == [
        ("admin", "tenant.add", "8", "ok"),
        ("admin5", "plan.add", "5/A", "ok"),
        ("viewer5", "plan.remove", "5/A", "refused 403"),
        ("viewer5", "login", None, "ok"),
        ("viewer5", "token.create", entries[-1]["target"], "ok"),
    ]
    assert all(
        set(e) == {"time", "user", "tenant", "action", "target", "outcome", "remote"}
        for e in entries
    )
    assert caplog.text.count('"action": "') == 5
    mode = (manager.auth.data_dir / "audit.jsonl").stat().st_mode & 0o777
    assert mode == 0o600


def test_passwords_never_reach_logs_or_stored_files(tmp_path, capfd, caplog):
    from manager.server import Manager
    from manager.settings import load_manager_settings
    from tests.manager.manager_fakes import FakeLauncher

    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    with caplog.at_level(logging.DEBUG):
        m = Manager(settings, launcher=FakeLauncher()).start()
        try:
            client = create_app({"MANAGER": m}).test_client()
            client.post("/api/v1/login", json={"user": "admin", "password": ADMIN_PASSWORD})
            client.post(
                "/api/v1/login", json={"user": "admin", "password": "typo-" + ADMIN_PASSWORD}
            )
            log_in(client, password="typo2-" + ADMIN_PASSWORD)
        finally:
            m.stop()
    out = capfd.readouterr()
    everything = (
        caplog.text
        + out.out
        + out.err
        + "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    )
    assert "login" in caplog.text  # the attempts were logged ...
    assert ADMIN_PASSWORD not in everything  # ... without the password, right or wrong
    users = tmp_path / "security" / "users.json"
    assert users.stat().st_mode & 0o777 == 0o600 and "scrypt:" in users.read_text()


def test_first_start_generates_and_prints_a_password_once(tmp_path, monkeypatch, capsys):
    from manager.auth import AuthService
    from manager.settings import load_manager_settings

    monkeypatch.delenv("CEP_ADMIN_PASSWORD")
    settings = load_manager_settings(overrides={"manager.data_dir": str(tmp_path)}, env={})
    service = AuthService(settings, tmp_path)
    assert service.bootstrap() == "generated"
    shown = capsys.readouterr().err
    password = re.search(r"password (\S+) \(shown once", shown).group(1)
    assert service.directory.authenticate("admin", password) is not None
    assert AuthService(settings, tmp_path).bootstrap() is None  # not again
    assert capsys.readouterr().err == ""
    key = tmp_path / "security" / "app-secret-key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_text().strip()) == 64


def test_logout_and_a_new_password_end_copies_of_the_session_cookie(app, people):
    client = app.test_client()
    log_in(client, "admin5", PASSWORD)
    stolen = client.get_cookie("cep_session").value
    thief = app.test_client()
    thief.set_cookie("cep_session", stolen)
    assert thief.get("/console/tenants/5/plans").status_code == 200
    page = client.get("/console/tenants/5/plans").text
    client.post("/console/logout", data={"csrf_token": csrf_of(page)})
    assert thief.get("/console/tenants/5/plans").status_code == 302  # the copy died too
    log_in(client, "admin5", PASSWORD)
    assert client.get("/console/tenants/5/plans").status_code == 200
    assert (
        people.admin.put(
            "/api/v1/users/admin5/password", json={"password": "a new password"}
        ).status_code
        == 200
    )
    assert client.get("/console/tenants/5/plans").status_code == 302


def test_failed_logins_slow_the_failing_address_and_never_lock_the_user_out(people, manager, app):
    manager.auth.throttle.addr_limit = 3
    attacker = {"REMOTE_ADDR": "198.51.100.7"}

    def login(password, env, user="viewer5"):
        return people.anon.post(
            "/api/v1/login", json={"user": user, "password": password}, environ_base=env
        )

    for _ in range(3):
        assert login("x" * 9, attacker).status_code == 401
    refused = login(PASSWORD, attacker)  # even the right password, from the failing address
    assert refused.status_code == 429 and "too many failed logins" in refused.get_json()["message"]
    assert int(refused.headers["Retry-After"]) >= 1
    console = app.test_client()
    console.environ_base.update(attacker)
    page = log_in(console, "viewer5", PASSWORD)
    assert page.status_code == 429 and "too many failed logins" in page.text
    assert int(page.headers["Retry-After"]) >= 1
    # the user, from an address that has not failed: always let in (no lock-out by others)
    assert login(PASSWORD, {"REMOTE_ADDR": "203.0.113.9"}).status_code == 201
    assert log_in(app.test_client(), "viewer5", PASSWORD).status_code == 302
    outcomes = [(e["action"], e["outcome"], e["remote"]) for e in manager.auth.audit.lines()]
    assert outcomes.count(("login.lock", "locked", "198.51.100.7")) == 1  # audited once
    assert ("login", "throttled", "198.51.100.7") in outcomes
    manager.auth.throttle.window = 0.0  # the window passed
    assert login(PASSWORD, attacker).status_code == 201


def test_a_password_change_needs_the_current_password_and_revokes_the_other_tokens(people, manager):
    from tests.security.auth_fixtures import PASSWORD

    other = manager.auth.create_token("viewer5", "laptop")[0]  # another token of the user
    url = "/api/v1/users/viewer5/password"
    # a stolen token alone cannot take the account over
    assert people.viewer5.put(url, json={"password": "a brand new secret"}).status_code == 403
    assert (
        people.viewer5.put(
            url, json={"current": "wrong guess!!", "password": "a brand new secret"}
        ).status_code
        == 403
    )
    done = people.viewer5.put(url, json={"current": PASSWORD, "password": "a brand new secret"})
    assert done.status_code == 200 and done.get_json()["tokens_revoked"] == 1
    assert people.viewer5.get("/api/v1/whoami").status_code == 200  # this request's token
    assert (
        people.anon.get("/api/v1/whoami", headers={"Authorization": f"Bearer {other}"}).status_code
        == 401
    )  # the other one is revoked
    assert manager.auth.directory.authenticate("viewer5", "a brand new secret") is not None
    # a super admin sets another user's password without it; all that user's tokens go
    assert people.admin.put(url, json={"password": "admin chose this one"}).status_code == 200
    assert people.viewer5.get("/api/v1/whoami").status_code == 401
    actions = [(e["action"], e["outcome"]) for e in manager.auth.audit.lines()]
    assert actions.count(("password.change", "refused")) == 2
    assert actions.count(("password.change", "ok")) == 2
