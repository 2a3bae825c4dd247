"""Class-data sharing archives for the Spark JVMs: a role's first JVM records its class list,
a background `java -Xshare:dump` makes the archive from it, the archive is checked with
-Xshare:on (a partial one would crash a JVM) and then mapped by every later JVM of the role.
Real Java, a real archive (of the classes a short JVM loads)."""

import os
import subprocess
import time

import pytest

from topology import jvm_cds


def settings(folder):
    return {"spark.cds_dir": str(folder)}


def _run_jvm(options):
    """A short JVM with the role's options, as Spark would start one."""
    done = subprocess.run(
        [jvm_cds.java_binary(), *options, "-cp", jvm_cds.spark_classpath(), "-version"],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr.decode()


def _settle(folder, pattern):
    past = time.time() - jvm_cds.SETTLE_S - 1
    for path in folder.glob(pattern):
        os.utime(path, (past, past))


def _wait_dump(folder, timeout=300):
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in jvm_cds._DUMPS.values()):
        assert time.monotonic() < deadline, "the background dump did not end"
        time.sleep(0.2)


def test_record_dump_check_then_map(tmp_path):
    first = jvm_cds.java_options(settings(tmp_path), "executor")
    assert len(first) == 1 and first[0].startswith("-XX:DumpLoadedClassList=")
    # the role's next JVMs neither record nor map while the list is recorded
    assert jvm_cds.java_options(settings(tmp_path), "executor") == []
    _run_jvm(first)
    assert jvm_cds.java_options(settings(tmp_path), "executor") == []  # not settled yet
    _settle(tmp_path, "*.classlist")
    assert jvm_cds.java_options(settings(tmp_path), "executor") == []  # the dump starts
    assert (tmp_path / f"{jvm_cds.archive_key('executor')}.dumping").exists()
    _wait_dump(tmp_path)
    options = jvm_cds.java_options(settings(tmp_path), "executor")
    final = tmp_path / f"{jvm_cds.archive_key('executor')}.jsa"
    assert options == [f"-XX:SharedArchiveFile={final}", "-Xshare:auto"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [final.name]
    assert "sharing" in _run_jvm(options)
    # another role has an archive of its own
    assert jvm_cds.java_options(settings(tmp_path), "master")[0].startswith(
        "-XX:DumpLoadedClassList="
    )


def test_a_partial_archive_is_never_mapped(tmp_path):
    key = jvm_cds.archive_key("worker")
    _run_jvm(jvm_cds.java_options(settings(tmp_path), "worker"))
    _settle(tmp_path, "*.classlist")
    jvm_cds.java_options(settings(tmp_path), "worker")
    _wait_dump(tmp_path)
    part = next(tmp_path.glob("*.part"))
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 3])  # a dump killed while it wrote the archive
    assert not jvm_cds.usable(part)
    assert jvm_cds.java_options(settings(tmp_path), "worker") == []  # not mapped
    assert not (tmp_path / f"{key}.jsa").exists() and not list(tmp_path.glob("*.part"))
    # the claim is young: nobody records again until it is stale
    assert jvm_cds.java_options(settings(tmp_path), "worker") == []
    past = time.time() - jvm_cds.STALE_S - 1
    os.utime(tmp_path / f"{key}.claim", (past, past))
    assert jvm_cds.java_options(settings(tmp_path), "worker")[0].startswith(
        "-XX:DumpLoadedClassList="
    )


def test_off_and_unknown_roles(tmp_path):
    assert jvm_cds.java_options({"spark.cds_dir": "off"}, "driver") == []
    with pytest.raises(ValueError, match="unknown JVM role 'nimbus'"):
        jvm_cds.java_options(settings(tmp_path), "nimbus")
