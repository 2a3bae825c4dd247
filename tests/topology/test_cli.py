"""The `cep topology` verb: parser registration and errors without a cluster."""

from cep.cli.main import build_parser, main


def test_topology_verbs_are_registered():
    parser = build_parser()
    args = parser.parse_args(["topology", "kill", "X[-1234]", "-w", "3"])
    assert args.name == "X[-1234]" and args.wait == 3.0 and callable(args.func)
    args = parser.parse_args(["topology", "bench", "--events", "10", "--grouping", "fields"])
    assert (args.events, args.grouping, args.json) == (10, "fields", False)


def test_list_and_kill_on_an_empty_state_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CEP_SPARK_STATE_DIR", str(tmp_path))
    # the embedded master, whatever the environment running the suite names
    monkeypatch.setenv("CEP_SPARK_MASTER", "embedded")
    assert main(["topology", "list"]) == 0
    assert capsys.readouterr().out.strip() == "No topologies running."
    assert main(["topology", "deactivate", "Nope[-1234]"]) == 1
    assert "no topology named 'Nope[-1234]'" in capsys.readouterr().out
    assert main(["topology", "cluster", "status"]) == 1
    assert capsys.readouterr().out.strip() == "embedded cluster not running"
