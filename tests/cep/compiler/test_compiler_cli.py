"""`cep validate PLAN`: "valid" and exit 0, or the positioned error and exit 2."""

import argparse

from cep.cli import validate


def run_validate(argv, capsys):
    parser = argparse.ArgumentParser(prog="cep")
    validate.subparser_hook(parser.add_subparsers(dest="verb"))
    args = parser.parse_args(["validate", *argv])
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_valid_plan(tmp_path, capsys):
    plan = tmp_path / "ok.siddhiql"
    plan.write_text("define stream S (a int);\nfrom S[a > 1] select a insert into O;\n")
    code, out, err = run_validate([str(plan)], capsys)
    assert (code, out.strip(), err) == (0, "valid", "")


def test_invalid_plan_prints_position_and_snippet(tmp_path, capsys):
    plan = tmp_path / "bad.siddhiql"
    plan.write_text("define stream S (a int);\nfrom S[b > 1] select a insert into O;\n")
    code, out, err = run_validate([str(plan)], capsys)
    assert code == 2 and out == ""
    first, source, carets = err.splitlines()
    assert first == (
        f"{plan}:2:8: UnknownAttributeError: attribute 'b' does not exist in "
        f"stream 'S' (attributes and types: a int)"
    )
    assert source == "from S[b > 1] select a insert into O;"
    assert carets == "       ^"


def test_syntax_error_kind_and_require_name(tmp_path, capsys):
    plan = tmp_path / "syntax.siddhiql"
    plan.write_text("define stream S (a int);\nfrom S selec a insert into O;\n")
    code, _, err = run_validate([str(plan)], capsys)
    assert code == 2 and ":2:8: SyntaxError: mismatched input 'selec'" in err
    plan.write_text("define stream S (a int);\nfrom S select a insert into O;\n")
    code, _, err = run_validate(["--require-name", str(plan)], capsys)
    assert code == 2 and "@Plan:name" in err


def test_unreadable_file(tmp_path, capsys):
    code, _, err = run_validate([str(tmp_path / "missing.siddhiql")], capsys)
    assert code == 2 and "cannot read" in err


def test_several_plans(tmp_path, capsys):
    good, bad = tmp_path / "good.siddhiql", tmp_path / "bad.siddhiql"
    good.write_text("define stream S (a int);\nfrom S select a insert into O;\n")
    bad.write_text("define stream S (a int);\nfrom T select a insert into O;\n")
    code, out, err = run_validate([str(good), str(bad)], capsys)
    assert code == 2
    assert out.strip() == f"{good}: valid"
    assert err.startswith(f"{bad}:2:6: UnknownStreamError: stream 'T' is not defined")
