"""How many executors and cores a topology asks for (topology.workers, topology.spare_workers)."""

from topology.driver import executors_needed


def test_tasks_are_spread_over_the_workers():
    assert executors_needed(5, 3) == (3, 2)
    assert executors_needed(5, 1) == (1, 5)
    assert executors_needed(2, 3) == (2, 1)  # never more executors than tasks


def test_spare_workers_leave_room_for_every_task_on_the_survivors():
    executors, cores = executors_needed(5, 3, spare=1)
    assert (executors, cores) == (3, 3)
    assert (executors - 1) * cores >= 5  # one executor lost: the others hold all 5 tasks
    executors, cores = executors_needed(7, 4, spare=2)
    assert (executors - 2) * cores >= 7 and (executors - 2) * (cores - 1) < 7  # no more
    assert executors_needed(5, 3, spare=5) == (3, 5)  # at most all but one: each holds all
    assert executors_needed(5, 1, spare=1) == (1, 5)


def test_a_task_knows_its_executor_from_the_executor_jvm_above_it():
    """A Python worker's ancestors: pyspark's daemon, then the executor JVM started with
    --executor-id N: that N is what the driver asks Spark to kill when the task goes silent."""
    import subprocess
    import sys

    from topology.task_watch import executor_id

    assert executor_id() is None  # pytest runs under no executor
    # a stand-in "JVM" (argv has --executor-id 7) whose child is a "daemon" whose child asks
    code = (
        "import subprocess, sys; print(subprocess.run([sys.executable, '-c', "
        "'from topology.task_watch import executor_id; print(executor_id())'], "
        "capture_output=True, text=True).stdout.strip())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "--executor-id", "7"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == "7"
