"""`cep VERB` imports only VERB's module (the others pull in Spark, Flask, ...); without a
known verb every verb is loaded, so help and errors list them all."""

import subprocess
import sys

from cep.cli.main import VERB_MODULES, build_parser, verb_module


def test_the_verb_is_the_first_argument_past_the_global_option():
    assert verb_module(["run", "p.siddhiql", "--events", "e.jsonl"]) == "cep.cli.run"
    assert verb_module(["--log-level", "INFO", "run", "p"]) == "cep.cli.run"
    assert verb_module(["--log-level=DEBUG", "backtest"]) == "cep.cli.backtest"
    assert verb_module(["import", "x.xml"]) == "cep.cli.import_cmd"
    assert verb_module(["runn"]) is None and verb_module([]) is None
    assert verb_module(["--help"]) is None and verb_module(["-h", "run"]) is None
    assert verb_module(["import_cmd"]) is None  # a module's name is not a verb
    assert all(
        verb_module([m.rsplit(".", 1)[1]]) == m
        for m in VERB_MODULES
        if not m.endswith("import_cmd")
    )


def test_one_verbs_parser_parses_as_the_full_parser(tmp_path):
    argv = ["run", "p.siddhiql", "--events", "e.jsonl", "--on-error", "fail"]
    assert vars(build_parser([verb_module(argv)]).parse_args(argv)) == vars(
        build_parser().parse_args(argv)
    )


def test_cep_run_does_not_import_the_other_verbs(tmp_path):
    plan, events = tmp_path / "p.siddhiql", tmp_path / "e.jsonl"
    plan.write_text("define stream S (x int);\nfrom S select x insert into Out;\n")
    events.write_text('{"stream": "S", "timestamp": 1, "data": [7]}\n')
    code = (
        "import sys; from cep.cli.main import main; "
        f"code = main(['run', {str(plan)!r}, '--events', {str(events)!r}]); "
        "print(code, sorted(m for m in ('pyspark', 'flask', 'cep.cli.manager') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert lines == ['{"stream":"Out","timestamp":1,"data":[7],"expired":false}', "0 []"]
