"""Issue 10: `cep login` stores a 0600 token that later commands send; `cep user|tenant|token`;
CEP_TOKEN overrides; a real `cep manager` process over TLS; a worker without the secret."""

import io
import json
import os
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import pytest
from werkzeug.serving import make_server

from cep.cli.main import main
from manager.server import Manager
from manager.settings import load_manager_settings
from manager.web import create_app
from tests.auth_helpers import ADMIN_PASSWORD
from tests.manager.manager_fakes import FakeLauncher

SAMPLE_PATH = "conf/samples/StockAnalysis.siddhiql"


@pytest.fixture
def served(tmp_path, monkeypatch):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "data"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    manager = Manager(settings, launcher=FakeLauncher()).start()
    server = make_server("127.0.0.1", 0, create_app({"MANAGER": manager}), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CEP_TOKEN", raising=False)
    url = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setenv("CEP_MANAGER_URL", url)
    yield url, manager
    server.shutdown()
    manager.stop()


def cli(capsys, monkeypatch, *argv, stdin=""):
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_login_stores_a_0600_token_that_later_commands_use(served, capsys, monkeypatch, tmp_path):
    url, _ = served
    code, _, err = cli(capsys, monkeypatch, "plan", "list")
    # (the URL's random port may contain "401": look past it)
    assert code == 1 and "401" not in err.replace(url, "") and "cep login" in err
    code, out, err = cli(
        capsys,
        monkeypatch,
        "login",
        "--user",
        "admin",
        "--password-stdin",
        stdin="wrong password\n",
    )
    assert code == 1 and "wrong user name or password" in err
    code, out, _ = cli(
        capsys,
        monkeypatch,
        "login",
        "--manager",
        url,
        "--user",
        "admin",
        "--password-stdin",
        stdin=ADMIN_PASSWORD + "\n",
    )
    assert code == 0 and "Logged in" in out and "super-admin" in out
    stored = tmp_path / "config" / "sparkcep" / "credentials.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert ADMIN_PASSWORD not in stored.read_text()
    assert json.loads(stored.read_text())["managers"][url]["user"] == "admin"
    code, out, _ = cli(capsys, monkeypatch, "plan", "add", SAMPLE_PATH)
    assert code == 0 and out.startswith("Added StockAnalysis")
    monkeypatch.setenv("CEP_TOKEN", "cep_bad_token")  # CEP_TOKEN overrides the file
    code, _, err = cli(capsys, monkeypatch, "plan", "list")
    assert code == 1 and "authentication required" in err


def test_user_tenant_and_token_verbs(served, capsys, monkeypatch):
    url, manager = served
    cli(
        capsys,
        monkeypatch,
        "login",
        "--user",
        "admin",
        "--password-stdin",
        stdin=ADMIN_PASSWORD + "\n",
    )
    assert cli(capsys, monkeypatch, "tenant", "add", "7", "--name", "seven")[0] == 0
    assert "7            seven" in cli(capsys, monkeypatch, "tenant", "list")[1]
    code, out, _ = cli(
        capsys,
        monkeypatch,
        "user",
        "add",
        "ann",
        "--tenant",
        "7",
        "--role",
        "tenant-admin",
        "--password-stdin",
        stdin="ann's password\n",
    )
    assert code == 0 and out.strip() == "Added user ann (tenant-admin, tenant 7)"
    assert "ann" in cli(capsys, monkeypatch, "user", "list")[1]
    code, token, _ = cli(capsys, monkeypatch, "token", "create", "--user", "ann", "--label", "ci")
    token = token.strip()
    assert code == 0 and token.startswith("cep_")
    monkeypatch.setenv("CEP_TOKEN", token)
    code, out, _ = cli(capsys, monkeypatch, "plan", "--tenant", "7", "add", SAMPLE_PATH)
    assert code == 0
    code, _, err = cli(capsys, monkeypatch, "plan", "--tenant", "-1234", "list")
    assert code == 1 and "not found" in err  # another tenant: 404
    code, _, err = cli(capsys, monkeypatch, "user", "list")
    assert code == 1 and "only a super-admin" in err
    token_id = token.split("_")[1]
    assert token_id in cli(capsys, monkeypatch, "token", "list")[1]
    assert cli(capsys, monkeypatch, "token", "revoke", token_id)[0] == 0
    assert cli(capsys, monkeypatch, "plan", "--tenant", "7", "list")[0] == 1
    monkeypatch.delenv("CEP_TOKEN")
    assert cli(capsys, monkeypatch, "user", "remove", "ann")[0] == 0


def _self_signed(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.mark.slow
def test_manager_process_over_tls_with_a_secure_session_cookie(tmp_path):
    cert, key = _self_signed(tmp_path)
    env = dict(os.environ, CEP_MANAGER_ADVERTISED_HOST="127.0.0.1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cep.cli.main",
            "manager",
            "--data-dir",
            str(tmp_path / "data"),
            "--http-port",
            "0",
            "--registry-port",
            "0",
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("CEP manager: REST https://127.0.0.1:"), proc.stderr.read()
        base = line.split()[3].rsplit("/api/v1", 1)[0]
        context = ssl.create_default_context(cafile=str(cert))
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + "/api/v1/manager", context=context, timeout=10)
        assert refused.value.code == 401
        login = urllib.request.Request(
            base + "/api/v1/login",
            method="POST",
            data=json.dumps({"user": "admin", "password": ADMIN_PASSWORD}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(login, context=context, timeout=10) as resp:
            token = json.loads(resp.read())["token"]
        req = urllib.request.Request(
            base + "/api/v1/manager", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(req, context=context, timeout=10) as resp:
            assert json.loads(resp.read())["store"] == "files"
        with urllib.request.urlopen(base + "/console/login", context=context, timeout=10) as resp:
            assert "Secure" in resp.headers["Set-Cookie"]
        with pytest.raises(OSError):  # plain HTTP is not served (reset or bad status)
            urllib.request.urlopen(base.replace("https", "http") + "/api/v1/manager", timeout=5)
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0


def test_manager_without_auth_beyond_loopback_refuses_to_start(tmp_path):
    env = dict(os.environ, CEP_SECURITY_AUTH="false")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cep.cli.main",
            "manager",
            "--data-dir",
            str(tmp_path),
            "--http-host",
            "0.0.0.0",
            "--http-port",
            "0",
            "--registry-port",
            "0",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2 and "--insecure" in result.stderr
