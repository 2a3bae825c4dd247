"""The embedded cluster's processes: a driver on the same machine sees their end at once."""

import subprocess

from topology.cluster import ended_cluster_process


def test_ended_cluster_process_names_the_first_ended_role():
    master = subprocess.Popen(["sleep", "60"])
    worker = subprocess.Popen(["sleep", "60"])
    try:
        assert ended_cluster_process([master.pid, worker.pid]) is None
        worker.kill()
        worker.wait()
        assert ended_cluster_process([master.pid, worker.pid]) == ("worker", worker.pid)
        master.kill()
        master.wait()
        assert ended_cluster_process([master.pid, worker.pid]) == ("master", master.pid)
    finally:
        for proc in (master, worker):
            proc.kill()
            proc.wait()


def test_an_external_cluster_has_no_processes_to_watch():
    assert ended_cluster_process([]) is None and ended_cluster_process(None) is None
