"""How a topology's executors get the project's code and its Python dependencies.

``topology.code``:
- ``ship``: the project's packages go as a zip with every application
  (``spark.submit.pyFiles``) and the dependencies as a packed environment
  (``spark.archives <env>.tar.gz#env``, executors run ``./env/bin/python``), both built once
  per content hash (topology/packaging.py). With ``topology.executor_python`` set, no
  environment is shipped: every executor runs that interpreter, which the cluster's
  operator has given the dependencies (a per-cluster Python). Nothing refers to a path of
  the manager's machine.
- ``path``: executors import this checkout (``spark.executorEnv.PYTHONPATH``) with this
  Python: only where the executors run on the manager's machine (fast to start).
- ``auto`` (default): ``path`` for the embedded cluster, ``ship`` for any other master.
"""

import os
import sys
from dataclasses import dataclass, field

from topology.packaging import EXECUTOR_DISTRIBUTIONS, EXECUTOR_MODULES, code_archive, env_archive
from topology.spark_settings import PROJECT_ROOT, state_dir

ENV_ALIAS = "env"  # the folder spark.archives unpacks the environment into


@dataclass(frozen=True)
class Shipping:
    """What one application sends and which Pythons it runs."""

    mode: str  # "ship" or "path"
    driver_python: str
    executor_python: str
    code: str = ""  # the project zip (ship)
    env: str = ""  # the packed environment (ship, no executor_python)
    env_python: str = ""  # CPython the environment runs with (CEP_ENV_PYTHON)
    python_path: tuple = field(default=())  # executors' PYTHONPATH (path mode, extras)

    def spark_conf(self):
        """The Spark properties that ship the code (or point at this checkout)."""
        conf = {
            "spark.pyspark.python": self.executor_python,
            "spark.pyspark.driver.python": self.driver_python,
        }
        if self.python_path:
            conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(self.python_path)
        if self.code:
            conf["spark.submit.pyFiles"] = self.code
        if self.mode == "ship":
            if self.env:
                conf["spark.archives"] = f"{self.env}#{ENV_ALIAS}"
            if self.env_python:
                conf["spark.executorEnv.CEP_ENV_PYTHON"] = self.env_python
        return conf

    def preflight(self):
        """What the driver checks on every executor before the topology's stage starts."""
        return {
            "modules": sorted(EXECUTOR_MODULES) + (["topology"] if self.mode == "ship" else []),
            "fix": fix_hint(self),
        }


def code_mode(settings):
    """'ship' or 'path' for these settings (auto: path only for the embedded cluster)."""
    mode = settings["topology.code"]
    if mode == "auto":
        return "path" if settings["spark.master"] == "embedded" else "ship"
    return mode


def plugin_python_path():
    """The folders of the installed SiddhiQL plug-ins (cep.catalog.plugins): executors that
    import this checkout (path mode) or run a fixed Python need them on their PYTHONPATH."""
    from cep.catalog import plugins

    return tuple(plugins.locations())


def resolve(settings):
    """The Shipping of an application with these settings (builds archives when needed).
    Installed plug-ins go along: in the packed environment (ship), else their folders are on
    the executors' PYTHONPATH."""
    driver_python = settings["spark.python"] or sys.executable
    extra = tuple(settings["spark.python_path"]) + plugin_python_path()
    if code_mode(settings) == "path":
        return Shipping(
            "path", driver_python, driver_python, python_path=(str(PROJECT_ROOT), *extra)
        )
    cache = state_dir(settings) / "ship"
    code = str(code_archive(cache))
    fixed = settings["topology.executor_python"]
    if fixed:
        return Shipping("ship", driver_python, fixed, code=code, python_path=extra)
    return Shipping(
        "ship",
        driver_python,
        f"./{ENV_ALIAS}/bin/python",
        code=code,
        env=str(env_archive(cache)),
        env_python=settings["topology.env_python"],
        python_path=extra,
    )


def fix_hint(shipping):
    """What to do when an executor cannot import the project's dependencies."""
    needs = ", ".join(EXECUTOR_DISTRIBUTIONS)
    if shipping.mode == "path":
        return (
            f"the executors run {shipping.executor_python} with this checkout on their "
            f"PYTHONPATH (topology.code: path), which only works on the manager's machine: "
            f"set topology.code: ship, or install {needs} and the project there"
        )
    if not shipping.env:
        return (
            f"install {needs} into {shipping.executor_python} on every Spark worker "
            f"(topology.executor_python), or leave topology.executor_python empty to ship "
            f"them as a packed environment"
        )
    return (
        f"the packed environment ({os.path.basename(shipping.env)}) should hold them: "
        f"check that the workers have CPython {sys.version_info[0]}.{sys.version_info[1]} "
        f"for it (topology.env_python) and see the executor's stderr"
    )
