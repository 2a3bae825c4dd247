"""`cep backtest`: an execution plan over stored history, as a Spark job on DataFrames.

inputs.py reads and checks the datasets against the stream definitions, planner.py decides
keyed (one engine per Spark partition of keys) or single-task, job.py builds and runs the
Spark job, task.py is what runs inside each task (the engine over timestamp-sorted events),
outputs.py writes to a temporary path and renames, progress.py and summary.py report."""

from cep.backtest.exceptions import BacktestError, InputError, SpecError  # noqa: F401
