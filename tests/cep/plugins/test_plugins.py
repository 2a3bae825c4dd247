"""The plug-in API: a plug-in distribution installed in a temporary folder registers a
function, an aggregator, a stream processor and a window under its namespace; the compiler
finds them, checks their calls with positioned errors, the engine runs them, `cep
extensions` lists them, broken plug-ins are refused with their reason, and topologies ship
the plug-in's folder to the executors."""

import subprocess
import sys
from pathlib import Path

import pytest

import cep
from cep.catalog import plugins
from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import TypeMismatchError, UnknownFunctionError
from tests.cep.plugins.install import install

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    target = install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(target))
    plugins.plugins(reload=True)
    yield target
    monkeypatch.undo()
    sys.modules.pop("cep_sample_plugin", None)
    plugins.plugins(reload=True)


def run(text, rows):
    rt = ExecutionPlanRuntime(cep.compile(text), playback=True)
    out = []
    rt.add_callback("Out", out.extend)
    for ts, row in enumerate(rows, 1):
        rt.input_handler("S").send(row, ts)
    return [r for _, r in out]


STREAM = "define stream S (sym string, v int);\n"


def test_discovery_lists_each_plugin_and_refuses_the_bad_ones(plugin_dir):
    found = {p.entry_point.split(" = ")[0]: p for p in plugins.plugins()}
    demo = found["demo"]
    assert demo.error == "" and demo.namespace == "demo"
    assert demo.distribution == "cep-sample-plugin 0.1.0"
    assert set(demo.names) == {
        "function demo:twice",
        "aggregator demo:range",
        "stream processor #demo:tag",
        "window #window.demo:lastN",
    }
    assert "NOT_THERE" in found["broken"].error
    assert "belongs to Siddhi's standard extensions" in found["greedy"].error
    assert str(plugin_dir) in plugins.locations()


def test_a_plugin_function_is_typed_checked_and_run(plugin_dir):
    assert run(
        STREAM + "from S select demo:twice(v) as w insert into Out;", [("a", 2), ("b", None)]
    ) == [(4,), (None,)]
    with pytest.raises(TypeMismatchError) as info:
        cep.compile(STREAM + "from S select demo:twice(sym) as w insert into Out;")
    assert "needs a number" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (2, 26)


def test_a_plugin_aggregator_runs_over_a_window(plugin_dir):
    out = run(
        STREAM + "from S#window.length(2) select demo:range(v) as r insert into Out;",
        [("a", 5), ("a", 1), ("a", 4)],
    )
    assert out == [(0.0,), (4.0,), (3.0,)]


def test_a_plugin_stream_processor_appends_attributes(plugin_dir):
    out = run(
        STREAM + "from S#demo:tag('x')[seen > 1] select sym, label, seen insert into Out;",
        [("a", 1), ("b", 2)],
    )
    assert out == [("b", "x", 2)]
    with pytest.raises(TypeMismatchError):
        cep.compile(STREAM + "from S#demo:tag(v) select sym insert into Out;")


def test_a_plugin_window_is_checked_and_run(plugin_dir):
    out = run(
        STREAM + "from S#window.demo:lastN(1) select sum(v) as s insert into Out;",
        [("a", 1), ("a", 2), ("a", 3)],
    )
    assert out == [(1,), (2,), (3,)]
    with pytest.raises(TypeMismatchError):
        cep.compile(STREAM + "from S#window.demo:lastN('x') select v insert into Out;")


def test_unknown_plugin_names_are_positioned_errors(plugin_dir):
    with pytest.raises(UnknownFunctionError) as info:
        cep.compile(STREAM + "from S select demo:nope(v) as w insert into Out;")
    assert info.value.span.line == 2


def test_cep_extensions_lists_plugins_and_standard_extensions(plugin_dir):
    env = {"PYTHONPATH": f"{plugin_dir}:{ROOT}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "cep.cli.main", "extensions"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "demo:twice" in out and "#window.demo:lastN" in out and "#demo:tag" in out
    assert "cep-sample-plugin 0.1.0" in out
    assert "refused" in out and "NOT_THERE" in out
    assert "#reorder:kslack" in out and "kf:kalmanFilter" in out


def test_topologies_ship_the_plugins_folder(plugin_dir):
    from topology.packaging import plugin_distributions
    from topology.shipping import plugin_python_path

    assert str(plugin_dir) in plugin_python_path()
    assert "cep-sample-plugin" in plugin_distributions()
