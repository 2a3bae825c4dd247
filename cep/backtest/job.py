"""The backtest job: datasets -> one DataFrame of events -> kernels and engine per task.

Every input becomes `__ts`, `__seq` (row order in the dataset), its attributes `c<i>_<j>` and,
with several inputs, `__s` (its index in the --input order) and `__k` (the partition key as a
string); one keyed input is repartitioned by its key attribute's own column (no copy of it
through the shuffle). Keyed plans are repartitioned by key (several partitions per executor)
and each task sorts its events by (key, __ts, __s, __seq) with numpy (keyed_task.py, faster
than Spark's sort); single-task plans go into one partition sorted by Spark by (__ts, __s,
__seq). mapInArrow hands the batches to the task. Ties of equal timestamps thus go in --input
order, then row order: the order of the merged file `cep run --playback` is compared with (per
key, for keyed plans). Spark's shuffle does not keep row order, hence `__seq`."""

import logging
import os
import re
import shutil
import tempfile
import time

import cep
from cep.backtest import inputs as inputs_mod
from cep.backtest import outputs
from cep.backtest.exceptions import BacktestError, SpecError
from cep.backtest.planner import plan_mode
from cep.backtest.session import app_name, spark_session
from cep.backtest.summary import Summary, merge_stats
from cep.backtest.task import STAT_DDL, TaskSpec, run_partition
from cep.model.types import AttrType

log = logging.getLogger(__name__)
SPARK_TYPES = {
    AttrType.STRING: "string",
    AttrType.INT: "int",
    AttrType.LONG: "bigint",
    AttrType.FLOAT: "float",
    AttrType.DOUBLE: "double",
    AttrType.BOOL: "boolean",
    AttrType.OBJECT: "string",
}
BATCH_ROWS = 100_000  # Arrow batch size into the tasks
PARTS_PER_CORE = 4  # keyed partitions per core at least: tasks even out
ROWS_PER_TASK = 500_000  # keyed partitions of about this many events: numpy's sorts and
# kernels run 1.5-2 times slower per event on 2.5M-event tasks (caches)


def run_backtest(
    plan_text,
    specs,
    output_dir,
    fmt="parquet",
    ts_column="timestamp",
    tenant="-1234",
    spark=None,
    master=None,
    executors=None,
    allow_nulls=False,
    overwrite=False,
    progress=None,
    bucket_ms=None,
    kernels=True,
):
    """Run `plan_text` over the InputSpecs; write `output_dir`; return the Summary."""
    if fmt not in outputs.EXTENSIONS:
        raise SpecError(f"--format {fmt!r}: use parquet, jsonl or csv")
    plan = cep.compile(plan_text)
    staging = tempfile.mkdtemp(prefix="cep-backtest-staging-")  # JSON lines/CSV as Parquet
    try:
        return _run(
            plan,
            plan_text,
            specs,
            output_dir,
            fmt,
            ts_column,
            tenant,
            spark,
            master,
            executors,
            allow_nulls,
            overwrite,
            progress,
            (bucket_ms, kernels),
            staging,
        )
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _run(
    plan,
    plan_text,
    specs,
    output_dir,
    fmt,
    ts_column,
    tenant,
    spark,
    master,
    executors,
    allow_nulls,
    overwrite,
    progress,
    options,
    staging,
):
    name = plan.name or "Plan"
    checked, exported = _check(plan, specs, ts_column, allow_nulls, staging)
    mode = plan_mode(plan, {c.stream for c in checked})
    if not mode.keyed:
        log.warning("backtest:%s[%s] runs in one task: %s", name, tenant, mode.reason)
    tmp = outputs.temp_output(output_dir, overwrite)
    own = spark is None
    started = time.monotonic()
    try:
        if own:
            spark = spark_session(app_name(name, tenant), master, executors)
        summary = Summary(
            name,
            tenant,
            "keyed" if mode.keyed else "single-task",
            mode.reason,
            output=os.path.abspath(output_dir),
            format=fmt,
            spark_master=spark.sparkContext.master,
        )
        rows = _execute(
            spark, plan_text, checked, exported, mode, tmp, fmt, options, progress, summary
        )
        summary.executors = _executors(spark)  # after the job: executors register meanwhile
        merge_stats(summary, rows)
        summary.run_seconds = time.monotonic() - started
        _write_summary(tmp, summary)
        outputs.commit(tmp, output_dir, exported)
        return summary
    except BaseException:
        outputs.discard(tmp)
        raise
    finally:
        if own and spark is not None:
            spark.stop()


def _check(plan, specs, ts_column, allow_nulls, staging):
    defined = {s.id: s for s in plan.streams if s.id not in plan.inferred_streams}
    seen, checked = set(), []
    for spec in specs:
        if spec.stream not in defined:
            raise SpecError(
                f"--input {spec.stream}={spec.path}: the plan defines no stream "
                f"{spec.stream} (streams: {', '.join(sorted(defined))})"
            )
        if spec.stream in seen:
            raise SpecError(f"--input {spec.stream}: given twice (one dataset per stream)")
        seen.add(spec.stream)
        checked.append(
            inputs_mod.check_input(spec, defined[spec.stream], ts_column, staging, allow_nulls)
        )
    rt = cep.ExecutionPlanRuntime(plan, playback=True)
    exported = tuple(s for s in rt.junctions if s not in seen)
    rt.shutdown()
    return checked, exported


def _execute(spark, plan_text, checked, exported, mode, tmp, fmt, options, progress, summary):
    bucket_ms, kernels = options
    _size_splits(spark, checked)
    frame, key_column = _events_frame(spark, checked, mode)
    totals = _totals(frame, checked)
    if not totals["n"]:
        return []
    span = max(totals["hi"] - totals["lo"], 1)
    summary.bucket_ms = bucket_ms or _nice_bucket(span)
    spec = TaskSpec(
        plan_text,
        tuple((c.stream, len(c.attributes)) for c in checked),
        exported,
        tmp,
        fmt,
        int(totals["hi"]),
        summary.bucket_ms,
        mode.keyed,
        key_column,
        kernels,
    )
    if mode.keyed:
        parts = max(
            PARTS_PER_CORE * spark.sparkContext.defaultParallelism, -(-totals["n"] // ROWS_PER_TASK)
        )
        ordered = frame.repartition(parts, key_column)
    else:
        sort = ("__ts", "__s", "__seq") if len(checked) > 1 else ("__ts", "__seq")
        ordered = frame.repartition(1).sortWithinPartitions(*sort)

    def engine(batches):
        from pyspark import TaskContext

        yield from run_partition(spec, batches, TaskContext.get().partitionId())

    job = ordered.mapInArrow(engine, STAT_DDL)
    try:
        if progress is not None:
            with progress(spark.sparkContext, totals["n"]):
                return [tuple(r) for r in job.collect()]
        return [tuple(r) for r in job.collect()]
    except Exception as exc:  # Py4JJavaError / PythonException with the task's traceback
        raise BacktestError(f"the backtest job failed: {_task_error(exc)}") from None


def _executors(spark):
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        return sc.defaultParallelism
    return max(sc._jsc.sc().getExecutorMemoryStatus().size() - 1, 0)  # minus the driver


def _totals(frame, checked):
    """Events, first and last timestamp: from the inputs' statistics, else one Spark pass."""
    if all(c.ts_range for c in checked):
        return {
            "n": sum(c.rows for c in checked),
            "lo": min(c.ts_range[0] for c in checked),
            "hi": max(c.ts_range[1] for c in checked),
        }
    from pyspark.sql import functions as F

    row = frame.agg(
        F.count("*").alias("n"), F.min("__ts").alias("lo"), F.max("__ts").alias("hi")
    ).collect()[0]
    return {"n": row["n"], "lo": row["lo"], "hi": row["hi"]}


def _events_frame(spark, checked, mode):
    """(the union of the inputs, the column keyed plans repartition by)."""
    from pyspark.sql import functions as F

    frames, multi = [], len(checked) > 1
    names = [a.name for a in checked[0].attributes]
    key_attr = mode.keys.get(checked[0].stream) if mode.keyed else None
    key_column = (
        f"c0_{names.index(key_attr)}" if key_attr and not multi else "__k" if mode.keyed else None
    )
    for i, c in enumerate(checked):
        df = spark.read.parquet(c.parquet)
        ts = F.col(c.ts_column)
        ts = F.unix_millis(ts) if "timestamp" in dict(df.dtypes)[c.ts_column] else ts.cast("long")
        cols = [ts.alias("__ts"), F.monotonically_increasing_id().alias("__seq")]
        if multi:
            cols.append(F.lit(i).cast("int").alias("__s"))
        if key_column == "__k":
            attr = mode.keys.get(c.stream)
            key = (
                F.col(attr).cast("string")
                if attr
                else (F.monotonically_increasing_id() % 1024).cast("string")
            )
            cols.append(key.alias("__k"))
        cols += [
            F.col(a.name).cast(SPARK_TYPES[a.type]).alias(f"c{i}_{j}")
            for j, a in enumerate(c.attributes)
        ]
        frames.append(df.select(*cols))
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other, allowMissingColumns=True)
    return frame, key_column


def _size_splits(spark, checked):
    """Input splits of about a quarter of an executor's share (whole row groups each), so the
    read and shuffle-write stage has work for every core (128 MB splits gave 3 tasks to 2)."""
    total = sum(_bytes(c.parquet) for c in checked)
    cores = spark.sparkContext.defaultParallelism
    size = min(max(total // (PARTS_PER_CORE * cores), 4 << 20), 128 << 20)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(size))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_ROWS))


def _bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def _nice_bucket(span_ms):
    """A round bucket width giving at most ~100 buckets over the span."""
    for width in (1000, 10_000, 60_000, 600_000, 3_600_000, 21_600_000, 86_400_000):
        if span_ms / width <= 100:
            return width
    return 86_400_000 * max(1, span_ms // (100 * 86_400_000))


def _write_summary(tmp, summary):
    import json

    with open(os.path.join(tmp, "_summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary.to_json(), f, indent=2)


def _task_error(exc):
    """The Python error line a task raised, without Spark's and the JVM's stack traces."""
    text = str(exc)
    found = re.findall(r"^(?:[\w.]+(?:Error|Exception)): .+$", text, re.M)
    python = [f for f in found if not f.startswith(("org.", "java.", "py4j", "scala."))]
    line = (python or found or [text.strip().splitlines()[0] if text.strip() else repr(exc)])[-1]
    return line[:500]
