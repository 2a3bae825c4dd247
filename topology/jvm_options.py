"""The JVM options of every Spark JVM this runtime starts: the embedded master and worker,
each topology's driver, and its executors.

A topology's JVMs orchestrate: the events run in Python processes that talk over ZeroMQ, so
after its start a JVM does little but answer the scheduler's RPC. Its start, though, is
CPU-heavy, and most of that is the C2 compiler at work on code that runs once. By default the
JVMs therefore compile with C1 only (``-XX:TieredStopAtLevel=1``) and collect with the serial
collector (one GC thread for the small driver and executor heaps): a `spark-submit` of a
one-stage application took 11.1 CPU-seconds with the JVM's defaults and 6.3-6.8 with these
(medians of 3, 2-core project machine). ``spark.jvm_options`` sets them; an empty value keeps
the JVM's defaults. Class-data sharing (topology/jvm_cds.py) comes on top, on this machine.
"""

import shlex

from topology.jvm_cds import java_options as sharing_options


def startup_options(settings) -> list:
    """The operator's (or the default) start-up options of ``spark.jvm_options``."""
    return shlex.split(settings.get("spark.jvm_options") or "")


def jvm_options(settings, role: str, local: bool = True) -> list:
    """Every option of one `role`'s next JVM ("master", "worker", "driver", "executor"):
    the start-up options, then class-data sharing when the JVM runs on this machine."""
    return startup_options(settings) + (sharing_options(settings, role) if local else [])
