"""`cep plan`: the global options --manager, --tenant and --json work before or after the
action, for every action (`cep plan list --manager URL` failed with "unrecognized arguments")."""

import json

import pytest

from cep.cli.main import build_parser
from cep.cli.plan import ACTIONS
from tests.manager.test_manager_cli import SAMPLE_PATH, cli, served  # noqa: F401 - fixture

POSITIONALS = {"file": SAMPLE_PATH, "name": "StockAnalysis"}


def action_argv(action, args):
    return [action, *(POSITIONALS[a] for a in args)]


@pytest.mark.parametrize("action,args", [(a, args) for a, _, args in ACTIONS])
@pytest.mark.parametrize("where", ["before", "after"])
def test_global_options_parse_before_or_after_every_action(action, args, where):
    options = ["--manager", "http://m:1", "--tenant", "7", "--json"]
    tail = action_argv(action, args)
    argv = ["plan", *options, *tail] if where == "before" else ["plan", *tail, *options]
    ns = build_parser().parse_args(argv)
    assert (ns.plan_verb, ns.manager, ns.tenant, ns.json) == (action, "http://m:1", 7, True)


@pytest.mark.parametrize("action,args", [(a, args) for a, _, args in ACTIONS])
def test_defaults_without_options(action, args, monkeypatch):
    monkeypatch.delenv("CEP_MANAGER_URL", raising=False)
    ns = build_parser().parse_args(["plan", *action_argv(action, args)])
    assert (ns.manager, ns.tenant, ns.json) == ("http://127.0.0.1:9763", -1234, False)


def test_every_action_against_a_manager_with_options_after(served, capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("CEP_MANAGER_URL", raising=False)  # only --manager finds it
    opts = ["--manager", served, "--tenant", "7"]
    code, out, err = cli(capsys, "plan", "add", SAMPLE_PATH, *opts, "--json")
    assert code == 0 and json.loads(out)["topology"] == "StockAnalysis[7]", err
    code, out, _ = cli(capsys, "plan", "list", *opts, "--json")
    assert [p["name"] for p in json.loads(out)["plans"]] == ["StockAnalysis"]
    assert cli(capsys, "plan", "list", "--manager", served)[1] == "No execution plans.\n"
    code, out, _ = cli(capsys, "plan", "show", "StockAnalysis", *opts)
    assert code == 0 and out.startswith("@Plan:name")
    code, out, _ = cli(capsys, "plan", "status", "StockAnalysis", *opts, "--json")
    assert code == 0 and json.loads(out)["tenant"] == 7
    code, out, _ = cli(capsys, "plan", "query-plan", "StockAnalysis", *opts)
    assert code == 0 and out.startswith("<storm-query-plan")
    code, out, _ = cli(capsys, "plan", "edit", "StockAnalysis", SAMPLE_PATH, *opts)
    assert code == 0 and out.startswith("Edited StockAnalysis")
    code, out, _ = cli(capsys, "plan", "remove", "StockAnalysis", *opts)
    assert code == 0 and out == "Removed StockAnalysis (tenant 7)\n"


def test_every_action_against_a_manager_with_options_before(served, capsys, monkeypatch):
    monkeypatch.delenv("CEP_MANAGER_URL", raising=False)
    opts = ["--manager", served, "--tenant", "7"]
    code, out, err = cli(capsys, "plan", *opts, "--json", "add", SAMPLE_PATH)
    assert code == 0 and json.loads(out)["topology"] == "StockAnalysis[7]", err
    code, out, _ = cli(capsys, "plan", *opts, "--json", "list")
    assert [p["name"] for p in json.loads(out)["plans"]] == ["StockAnalysis"]
    code, out, _ = cli(capsys, "plan", *opts, "show", "StockAnalysis")
    assert code == 0 and out.startswith("@Plan:name")
    code, out, _ = cli(capsys, "plan", *opts, "--json", "status", "StockAnalysis")
    assert code == 0 and json.loads(out)["tenant"] == 7
    code, out, _ = cli(capsys, "plan", *opts, "query-plan", "StockAnalysis")
    assert code == 0 and out.startswith("<storm-query-plan")
    code, out, _ = cli(capsys, "plan", *opts, "edit", "StockAnalysis", SAMPLE_PATH)
    assert code == 0 and out.startswith("Edited StockAnalysis")
    code, out, _ = cli(capsys, "plan", *opts, "remove", "StockAnalysis")
    assert code == 0 and out == "Removed StockAnalysis (tenant 7)\n"
