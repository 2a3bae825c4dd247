"""The spark-submit command of a topology application, for each kind of cluster.

    cmd = submit_command(settings, "Trades[-1234]", run_dir, executors=1, cores=3)
    cmd.argv, cmd.env                  # what to run; cmd.text() prints it for a shell

The driver always runs in client mode on the manager's machine (it answers the manager's
control requests through its run directory); only executors run on the cluster:

- standalone (``spark://host:port``, ``embedded``): what ``topology.launcher.submit`` runs.
  With ``topology.code: ship`` the code goes as ``spark.submit.pyFiles`` and the Python
  dependencies as ``spark.archives <env>.tar.gz#env``, executors run ``./env/bin/python``.
- YARN (``yarn``): the same archives as ``--py-files`` and ``--archives <env>.tar.gz#env``,
  ``PYSPARK_PYTHON=./env/bin/python``; executors per topology are ``spark.executor.instances``.
- Kubernetes (``k8s://https://host:port``): executors are pods of the container image built
  from ``deploy/Dockerfile`` (Python, Java, Spark and the project's wheel with its
  dependencies), so nothing is shipped: ``spark.pyspark.python`` is the image's Python.
"""

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from topology.exceptions import LaunchError
from topology.shipping import ENV_ALIAS, Shipping, resolve

SPARKAPP = Path(__file__).resolve().parent / "sparkapp.py"
IMAGE_PYTHON = "/opt/sparkcep/venv/bin/python"  # deploy/Dockerfile's virtual environment
STANDALONE_ONLY = ("spark.cores.max",)


@dataclass
class SubmitCommand:
    """argv of spark-submit and the environment variables it needs."""

    argv: list
    env: dict = field(default_factory=dict)

    def text(self):
        """The command for a shell: VAR=value prefixes, one option per line."""
        prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        parts, i = [], 1
        while i < len(self.argv):
            arg = self.argv[i]
            if arg.startswith("--") and i + 1 < len(self.argv):
                parts.append(f"{arg} {shlex.quote(self.argv[i + 1])}")
                i += 2
            else:
                parts.append(shlex.quote(arg))
                i += 1
        head = f"{prefix} {shlex.quote(self.argv[0])}".strip()
        return " \\\n    ".join([head, *parts])


def cluster_kind(master):
    """'standalone', 'yarn' or 'kubernetes' for a spark.master value."""
    if master == "embedded" or master.startswith("spark://"):
        return "standalone"
    if master == "yarn":
        return "yarn"
    if master.startswith("k8s://"):
        return "kubernetes"
    raise LaunchError(
        f"spark.master must be embedded, spark://host:port, yarn or "
        f"k8s://https://host:port, got {master!r}"
    )


def submit_command(
    settings,
    name,
    run_dir,
    executors,
    cores,
    master=None,
    image="",
    namespace="default",
    spark_submit="spark-submit",
    shipping=None,
):
    """The SubmitCommand of topology `name` (master: settings' spark.master unless given;
    image and namespace: Kubernetes only)."""
    from topology.app_conf import spark_conf

    master = master or settings["spark.master"]
    kind = cluster_kind(master)
    if kind == "kubernetes":
        return _kubernetes(
            settings, name, run_dir, executors, cores, master, image, namespace, spark_submit
        )
    shipping = shipping or resolve(settings.with_overrides({"spark.master": master}))
    conf = spark_conf(settings, executors, cores, shipping)
    argv = [
        spark_submit,
        "--master",
        master,
        "--deploy-mode",
        "client",
        "--name",
        name,
        "--driver-memory",
        settings["spark.driver_memory"],
    ]
    env = {}
    if kind == "yarn":
        for key in (
            *STANDALONE_ONLY,
            "spark.submit.pyFiles",
            "spark.archives",
            "spark.pyspark.python",
            "spark.pyspark.driver.python",
        ):
            conf.pop(key, None)
        conf["spark.executor.instances"] = str(executors)
        if shipping.code:
            argv += ["--py-files", shipping.code]
        if shipping.env:
            argv += ["--archives", f"{shipping.env}#{ENV_ALIAS}"]
        env = {
            "PYSPARK_PYTHON": shipping.executor_python,
            "PYSPARK_DRIVER_PYTHON": shipping.driver_python,
        }
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    return SubmitCommand(argv + [str(SPARKAPP), str(run_dir)], env)


def _kubernetes(settings, name, run_dir, executors, cores, master, image, namespace, spark_submit):
    if not image:
        raise LaunchError(
            "a Kubernetes submit needs the container image built from deploy/Dockerfile (image=...)"
        )
    from topology.app_conf import spark_conf

    extra = tuple(settings["spark.python_path"])  # paths inside the image, if any
    shipping = Shipping(
        "ship", settings["spark.python"] or sys.executable, IMAGE_PYTHON, python_path=extra
    )
    conf = spark_conf(settings, executors, cores, shipping)
    for key in STANDALONE_ONLY:
        conf.pop(key, None)
    conf.update(
        {
            "spark.executor.instances": str(executors),
            "spark.kubernetes.container.image": image,
            "spark.kubernetes.namespace": namespace,
            "spark.kubernetes.executor.podNamePrefix": _pod_prefix(name),
        }
    )
    argv = [
        spark_submit,
        "--master",
        master,
        "--deploy-mode",
        "client",
        "--name",
        name,
        "--driver-memory",
        settings["spark.driver_memory"],
    ]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    return SubmitCommand(
        argv + [str(SPARKAPP), str(run_dir)], {"PYSPARK_DRIVER_PYTHON": shipping.driver_python}
    )


def _pod_prefix(name):
    """A DNS-1123 pod name prefix from a topology name (Trades[-1234] -> trades-1234)."""
    text = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    while "--" in text:
        text = text.replace("--", "-")
    return (text or "topology")[:40].rstrip("-")
