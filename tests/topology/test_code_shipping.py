"""Code shipping without Spark (issue 14): the project zip and the packed environment (built
once per content hash, cached, rebuilt on change, importable from a bare interpreter), the
settings that choose ship or path, the Spark properties each sets (no manager path for an
executor), the preflight reasons, and the rendered spark-submit commands for standalone,
YARN and Kubernetes."""

import os
import shlex
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from topology.exceptions import LaunchError, SettingValueError
from topology.launcher import _spark_submit_command, spark_conf
from topology.packaging import EXECUTOR_MODULES, code_archive, dependency_closure, env_archive
from topology.preflight import make_check, missing_reason
from topology.shipping import code_mode, resolve
from topology.spark_settings import PROJECT_ROOT, load_spark_settings
from topology.submit_command import IMAGE_PYTHON, cluster_kind, submit_command

SPARK_LIB = Path(__import__("pyspark").__file__).parent / "python" / "lib"


def settings(tmp_path, **extra):
    return load_spark_settings(env={}, overrides={"spark.state_dir": str(tmp_path), **extra})


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    """One spark.state_dir for the module: its archives are built once."""
    return tmp_path_factory.mktemp("ship-state")


@pytest.fixture(scope="module")
def shipped(state):
    """The real project's zip and environment, built once for the module."""
    return code_archive(state / "ship"), env_archive(state / "ship")


def fake_project(root, body="VALUE = 1\n"):
    (root / "pkg" / "ns").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text(body)
    (root / "pkg" / "ns" / "mod.py").write_text(
        "import pkgutil\nDATA = pkgutil.get_data(__name__, 'g.lark')\n"
    )
    (root / "pkg" / "ns" / "g.lark").write_text("start: NAME\n")
    (root / "pkg" / "README.md").write_text("not shipped\n")
    return root


def test_code_zip_is_cached_by_content_and_rebuilt_on_change(tmp_path):
    root = fake_project(tmp_path / "src")
    first = code_archive(tmp_path / "cache", root, ("pkg",))
    built = first.stat().st_mtime_ns
    again = code_archive(tmp_path / "cache", root, ("pkg",))
    assert again == first and again.stat().st_mtime_ns == built  # cached, not rebuilt
    (root / "pkg" / "__init__.py").write_text("VALUE = 2\n")
    changed = code_archive(tmp_path / "cache", root, ("pkg",))
    assert changed != first and changed.exists()
    names = zipfile.ZipFile(changed).namelist()
    assert {"pkg/", "pkg/ns/", "pkg/__init__.py", "pkg/__init__.pyc", "pkg/ns/g.lark"} <= set(names)
    assert "pkg/README.md" not in names


def test_code_zip_imports_namespace_packages_and_data_from_the_zip(tmp_path):
    zip_path = code_archive(tmp_path / "cache", fake_project(tmp_path / "src"), ("pkg",))
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(zip_path)!r}); "
            "import pkg, pkg.ns.mod as m; print(pkg.VALUE, m.DATA.decode().strip(), "
            "m.__file__, sep='|')",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    value, data, where = out.stdout.strip().split("|")
    assert (value, data) == ("1", "start: NAME") and where.startswith(str(zip_path))


def test_project_zip_compiles_a_plan_from_the_zip(shipped):
    code, _ = shipped
    program = (
        "import sys; sys.path.insert(0, sys.argv[1]); import cep, cep.bolt, "
        "receivers.spout, publishers.bolt, topology.task; "
        "assert cep.__file__.startswith(sys.argv[1]), cep.__file__; "
        "print(cep.compile('define stream S (a int); from S[a > 1] select a "
        "insert into O;').streams[0].id)"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            program,
            str(code),
        ],
        capture_output=True,
        text=True,
        cwd="/",
        env={"PATH": os.environ["PATH"], "PYTHONPATH": f"{SPARK_LIB / 'pyspark.zip'}"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "S"


def test_environment_holds_the_dependencies_and_not_pyspark(shipped):
    names = {d.metadata["Name"].lower() for d in dependency_closure()}
    assert {"pyzmq", "msgpack", "lark", "msgspec", "pyyaml", "werkzeug"} <= names
    assert not names & {"pyspark", "py4j", "sparkcep", "pytest", "pyarrow"}
    _, env = shipped
    with tarfile.open(env) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["bin/python"].mode & 0o111
    assert any(n.startswith("lib/python3.11/site-packages/zmq/") for n in members)
    assert not any("/pyspark/" in n for n in members)


def test_environment_runs_from_any_folder_with_its_own_packages(shipped, tmp_path):
    _, env = shipped
    with tarfile.open(env) as tar:
        tar.extractall(tmp_path / "env", filter="tar")
    program = (
        "import sys, zmq, msgpack, lark, msgspec, yaml; print(sys.prefix); print(zmq.__file__)"
    )
    out = subprocess.run(
        ["./env/bin/python", "-c", program],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    prefix, zmq_file = out.stdout.split()
    assert prefix == str(tmp_path / "env") and zmq_file.startswith(str(tmp_path / "env"))


def test_env_archive_is_cached(shipped):
    _, first = shipped
    mtime = first.stat().st_mtime_ns
    assert env_archive(first.parent.parent) == first and first.stat().st_mtime_ns == mtime


def test_code_mode_defaults_to_path_only_for_the_embedded_cluster(state, tmp_path):
    assert code_mode(settings(state)) == "path"
    assert code_mode(settings(state, **{"spark.master": "spark://h:7077"})) == "ship"
    assert (
        code_mode(settings(state, **{"spark.master": "spark://h:7077", "topology.code": "path"}))
        == "path"
    )
    assert code_mode(settings(state, **{"topology.code": "ship"})) == "ship"
    with pytest.raises(SettingValueError, match="topology.code"):
        settings(state, **{"topology.code": "zip"})


def _executor_side(conf):
    return {
        k: v
        for k, v in conf.items()
        if k in ("spark.pyspark.python",) or k.startswith("spark.executorEnv.")
    }


def test_ship_mode_conf_names_no_path_of_the_managers_machine(state, tmp_path):
    s = settings(state, **{"spark.master": "spark://h:7077"})
    conf = spark_conf(s, 1, 3)
    assert conf["spark.pyspark.python"] == "./env/bin/python"
    assert conf["spark.archives"].endswith(".tar.gz#env")
    assert conf["spark.submit.pyFiles"].endswith(".zip")
    assert conf["spark.pyspark.driver.python"] == sys.executable  # the driver is on A
    for key, value in _executor_side(conf).items():
        assert str(PROJECT_ROOT) not in value and sys.prefix not in value, (key, value)
    assert "spark.executorEnv.SPARK_LOCAL_IP" not in conf  # executors bind their own address


def test_path_mode_conf_is_todays(state, tmp_path):
    conf = spark_conf(settings(state), 1, 3)
    assert conf["spark.executorEnv.PYTHONPATH"] == str(PROJECT_ROOT)
    assert conf["spark.pyspark.python"] == sys.executable
    assert "spark.archives" not in conf and "spark.submit.pyFiles" not in conf


def test_executor_python_ships_the_code_but_no_environment(state, tmp_path):
    s = settings(state, **{"topology.code": "ship", "topology.executor_python": "/opt/py"})
    shipping = resolve(s)
    conf = shipping.spark_conf()
    assert conf["spark.pyspark.python"] == "/opt/py" and "spark.archives" not in conf
    assert "spark.submit.pyFiles" in conf
    assert "topology.executor_python" in shipping.preflight()["fix"]


def test_preflight_lists_every_dependency_and_the_project_in_ship_mode(state, tmp_path):
    ship = resolve(settings(state, **{"topology.code": "ship"})).preflight()
    assert set(EXECUTOR_MODULES) | {"topology"} == set(ship["modules"])
    assert "topology" not in resolve(settings(state)).preflight()["modules"]


def test_preflight_check_reports_what_fails_to_import():
    (report,) = list(make_check(["json", "no_such_module_t7"])(iter([])))
    assert report["python"] == sys.executable
    assert report["missing"] == [
        ["no_such_module_t7", "ModuleNotFoundError: No module named 'no_such_module_t7'"]
    ]
    reason = missing_reason([report, {"host": "b", "python": "p", "missing": []}], "do X")
    assert reason.startswith(f"missing Python modules on executor {report['host']} ")
    assert "no_such_module_t7" in reason and reason.endswith("Fix: do X")
    assert missing_reason([{"host": "b", "python": "p", "missing": []}], "do X") is None


def test_standalone_command_is_the_launchers(state, tmp_path):
    s = settings(state, **{"spark.master": "spark://h:7077"})
    shipping = resolve(s)
    cmd = submit_command(s, "P[-1]", tmp_path / "run", 1, 3, shipping=shipping)
    launched = _spark_submit_command(
        "P[-1]",
        s,
        type("C", (), {"master_url": "spark://h:7077"}),
        1,
        3,
        tmp_path / "run",
        shipping,
    )
    assert cmd.argv[1:] == launched[1:] and cmd.env == {}


def test_yarn_command_ships_archives_with_env_python(state, tmp_path):
    s = settings(state)
    cmd = submit_command(s, "P[-1]", tmp_path / "run", 2, 3, master="yarn")
    argv = cmd.argv
    assert argv[argv.index("--master") + 1] == "yarn"
    assert argv[argv.index("--deploy-mode") + 1] == "client"
    assert argv[argv.index("--archives") + 1].endswith(".tar.gz#env")
    assert argv[argv.index("--py-files") + 1].endswith(".zip")
    assert cmd.env == {
        "PYSPARK_PYTHON": "./env/bin/python",
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    confs = dict(a.split("=", 1) for a in argv[1:] if "=" in a and a.startswith("spark."))
    assert confs["spark.executor.instances"] == "2" and "spark.cores.max" not in confs
    assert "spark.executorEnv.PYTHONPATH" not in confs
    assert shlex.split(cmd.text().replace("\\\n", " ")) == [
        *(f"{k}={v}" for k, v in sorted(cmd.env.items())),
        *argv,
    ]


def test_kubernetes_command_runs_the_images_python(state, tmp_path):
    s = settings(state)
    cmd = submit_command(
        s,
        "Stock Analysis[-1234]",
        tmp_path / "run",
        1,
        4,
        master="k8s://https://10.0.0.1:6443",
        image="reg/sparkcep:0.1.0",
        namespace="cep",
    )
    confs = dict(a.split("=", 1) for a in cmd.argv if a.startswith("spark."))
    assert confs["spark.kubernetes.container.image"] == "reg/sparkcep:0.1.0"
    assert confs["spark.kubernetes.namespace"] == "cep"
    assert confs["spark.kubernetes.executor.podNamePrefix"] == "stock-analysis-1234"
    assert confs["spark.pyspark.python"] == IMAGE_PYTHON
    assert confs["spark.executor.instances"] == "1" and confs["spark.executor.cores"] == "4"
    assert "--py-files" not in cmd.argv and "--archives" not in cmd.argv
    assert "spark.submit.pyFiles" not in confs and "spark.archives" not in confs
    for key, value in _executor_side(confs).items():
        assert str(PROJECT_ROOT) not in value, (key, value)
    with pytest.raises(LaunchError, match="deploy/Dockerfile"):
        submit_command(s, "P[-1]", tmp_path, 1, 1, master="k8s://https://h:6443")


def test_cluster_kind_rejects_unknown_masters():
    assert [cluster_kind(m) for m in ("embedded", "spark://h:7077", "yarn", "k8s://https://h")] == [
        "standalone",
        "standalone",
        "yarn",
        "kubernetes",
    ]
    with pytest.raises(LaunchError, match="mesos"):
        cluster_kind("mesos://h:5050")


def test_dockerfile_builds_the_image_the_kubernetes_command_names():
    """deploy/Dockerfile (no Docker daemon here to build it): Debian 12 (Python 3.11), Java 17,
    the project's wheel in the virtual environment whose Python the Kubernetes command runs,
    and the executor entry point Spark on Kubernetes calls."""
    text = (PROJECT_ROOT / "deploy" / "Dockerfile").read_text()
    assert "FROM debian:bookworm-slim" in text and "openjdk-17-jre-headless" in text
    assert (
        "pip wheel --no-deps" in text and "pip install --no-cache-dir /tmp/dist/sparkcep-" in text
    )
    assert f"PYSPARK_PYTHON={IMAGE_PYTHON}" in text
    entry = (PROJECT_ROOT / "deploy" / "k8s-entrypoint.sh").read_text()
    assert "KubernetesExecutorBackend" in entry and os.access(
        PROJECT_ROOT / "deploy" / "k8s-entrypoint.sh", os.X_OK
    )
    subprocess.run(["bash", "-n", str(PROJECT_ROOT / "deploy" / "k8s-entrypoint.sh")], check=True)
