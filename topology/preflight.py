"""The dependency check a topology's driver runs on its executors before the stage starts.

A cluster whose executors cannot import the project's dependencies (msgpack, zmq, ...) or
the project itself would otherwise fail every task attempt with the same traceback until
Spark gives up. The driver runs one small ordinary job first: one task per executor imports
each module and returns what failed, and the topology is FAILED at once with a reason that
names the missing modules, the executor and the fix.

The check function is built by ``make_check`` as a closure, so cloudpickle sends it by value:
it runs on an executor that has none of the project's code.
"""

import logging

log = logging.getLogger(__name__)
IMPORTED = ("msgpack", "zmq")  # imported, not only found: C extensions of every task


def make_check(modules, imported=IMPORTED):
    """A mapPartitions function that reports the modules an executor cannot import: each
    module must be found (importlib.util.find_spec, cheap), and the C extensions every task
    loads first (`imported`) must also import."""
    modules, imported = list(modules), set(imported)

    def check(_rows):
        import importlib
        import importlib.util
        import socket
        import sys

        missing = []
        for name in modules:
            try:
                if importlib.util.find_spec(name) is None:
                    raise ModuleNotFoundError(f"No module named {name!r}")
                if name in imported:
                    importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - any import failure is reported
                missing.append([name, f"{type(exc).__name__}: {exc}"[:200]])
        yield {"host": socket.gethostname(), "python": sys.executable, "missing": missing}

    return check


def check_executors(sc, executors, preflight):
    """None when every executor imports `preflight["modules"]`, else the FAILED reason."""
    if not preflight or not preflight.get("modules"):
        return None
    tasks = max(1, int(executors))
    sc.setJobGroup("preflight", "dependency check", interruptOnCancel=True)
    try:
        reports = (
            sc.parallelize(range(tasks), tasks)
            .mapPartitions(make_check(preflight["modules"]))
            .collect()
        )
    except Exception as exc:  # noqa: BLE001 - the executors could not run Python at all
        return (
            f"the executors could not start the topology's Python ({first_line(exc)}): "
            f"{preflight.get('fix', '')}"
        ).rstrip(": ")
    return missing_reason(reports, preflight.get("fix", ""))


def missing_reason(reports, fix):
    """The reason naming what is missing where, or None when nothing is."""
    bad = [r for r in reports if r["missing"]]
    if not bad:
        return None
    names = sorted({name for r in bad for name, _ in r["missing"]})
    first = bad[0]
    detail = "; ".join(error for _, error in first["missing"][:3])
    reason = (
        f"missing Python modules on executor {first['host']} ({first['python']}): "
        f"{', '.join(names)} ({detail})"
    )
    log.error("preflight: %s", reason)
    return f"{reason}. Fix: {fix}" if fix else reason


def first_line(exc, limit=300):
    """The Python error inside a Spark job failure, or its first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    python = [
        line
        for line in lines
        if line.split(":")[0].endswith(("Error", "Exception"))
        and not line.startswith(("org.", "py4j", "java."))
    ]
    return (python[-1] if python else (lines[0] if lines else type(exc).__name__))[:limit]
