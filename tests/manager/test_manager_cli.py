"""`cep plan` against a served manager, and `cep manager` as a real process."""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from werkzeug.serving import make_server

from cep.cli.main import main
from manager.server import Manager
from manager.settings import load_manager_settings
from manager.web import create_app
from tests.auth_helpers import admin_token
from tests.manager.manager_fakes import FakeLauncher
from tests.manager.manager_helpers import poll

SAMPLE_PATH = "conf/samples/StockAnalysis.siddhiql"


@pytest.fixture
def served(tmp_path, monkeypatch):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    manager = Manager(settings, launcher=FakeLauncher()).start()
    server = make_server("127.0.0.1", 0, create_app({"MANAGER": manager}), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("CEP_TOKEN", admin_token(manager))  # issue 10: the CLI's token
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    manager.stop()


def cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plan_verbs(served, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CEP_MANAGER_URL", served)
    code, out, _ = cli(capsys, "plan", "add", SAMPLE_PATH)
    assert code == 0 and out.startswith("Added StockAnalysis: topology StockAnalysis[-1234]")
    code, out, _ = cli(capsys, "plan", "--tenant", "7", "add", SAMPLE_PATH)
    assert code == 0 and "StockAnalysis[7]" in out
    poll(lambda: "ACTIVE" in cli(capsys, "plan", "list")[1], 5, 0.05, "ACTIVE in list")
    code, out, _ = cli(capsys, "plan", "list", "--json")
    assert [p["name"] for p in json.loads(out)["plans"]] == ["StockAnalysis"]
    code, out, _ = cli(capsys, "plan", "show", "StockAnalysis")
    assert out.rstrip("\n") == open(SAMPLE_PATH).read().rstrip("\n")
    code, out, _ = cli(capsys, "plan", "status", "StockAnalysis")
    assert out.splitlines() == [
        "Storm topology : ACTIVE",
        "Inflow connections : no receivers found",
        "Outflow connections : 0/1 established",
    ]
    code, out, _ = cli(capsys, "plan", "query-plan", "StockAnalysis")
    assert out.startswith("<storm-query-plan>") and 'name="filter" parallel="2"' in out
    edited = tmp_path / "edited.siddhiql"
    edited.write_text(open(SAMPLE_PATH).read().replace("500.0", "700.0"))
    code, out, _ = cli(capsys, "plan", "edit", "StockAnalysis", str(edited))
    assert code == 0 and out.startswith("Edited StockAnalysis")
    assert "700.0" in cli(capsys, "plan", "show", "StockAnalysis")[1]
    code, out, _ = cli(capsys, "plan", "remove", "StockAnalysis", "--tenant", "7")
    assert out.strip() == "Removed StockAnalysis (tenant 7)"
    assert cli(capsys, "plan", "--tenant", "7", "list")[1].strip() == "No execution plans."


def test_plan_errors(served, capsys, tmp_path):
    bad = tmp_path / "bad.siddhiql"
    bad.write_text(
        open(SAMPLE_PATH).read().replace("insert into HighPriceStream;", "insert HighPriceStream;")
    )
    code, out, err = cli(capsys, "plan", "--manager", served, "add", str(bad))
    assert code == 1 and err.startswith("error: line ") and "^" in err
    code, _, err = cli(capsys, "plan", "--manager", served, "show", "Nope")
    assert code == 1 and "no execution plan 'Nope'" in err
    code, _, err = cli(capsys, "plan", "--manager", served, "add", str(tmp_path / "missing"))
    assert code == 1 and "cannot read" in err
    code, _, err = cli(capsys, "plan", "--manager", "http://127.0.0.1:9", "list")
    assert code == 1 and "cannot reach the manager" in err


def test_cep_manager_process_serves_and_stops(tmp_path):
    env = dict(os.environ, CEP_MANAGER_ADVERTISED_HOST="127.0.0.1")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cep.cli.main",
            "manager",
            "--data-dir",
            str(tmp_path),
            "--http-host",
            "127.0.0.1",
            "--http-port",
            "0",
            "--registry-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("CEP manager: REST http://127.0.0.1:"), proc.stderr.read()
        url = line.split()[3].rsplit("/api/v1", 1)[0]
        login = subprocess.run(
            [
                sys.executable,
                "-m",
                "cep.cli.main",
                "login",
                "--manager",
                url,
                "--user",
                "admin",
                "--password-stdin",
                "--print-token",
            ],
            input=env["CEP_ADMIN_PASSWORD"] + "\n",
            capture_output=True,
            text=True,
            timeout=60,
        )  # issue 10: the first-start password
        assert login.returncode == 0, login.stderr
        result = subprocess.run(
            [sys.executable, "-m", "cep.cli.main", "plan", "--manager", url, "list"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(env, CEP_TOKEN=login.stdout.strip()),
        )
        assert result.stdout.strip() == "No execution plans."
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
