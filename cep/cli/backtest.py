"""Run an execution plan over stored history as a Spark job (one engine per key group).

Each --input STREAM=PATH is a Parquet file or directory, JSON lines or CSV with a timestamp
column (epoch ms, --timestamp-column) and the stream's attributes. Events of all inputs are
merged in timestamp order (ties: --input order, then row order), as `cep run --playback`
reads a merged file. Each exported stream is written to DIR/<Stream>/ in --format, with
DIR/_summary.json; on failure nothing is left in DIR. Without --spark-master the job runs
in local[N] (N = --executors, default the CPUs); `embedded` uses the embedded cluster."""

import json
import sys

from cep.errors import CepError, SiddhiQLError


def subparser_hook(subparsers):
    p = subparsers.add_parser("backtest", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("plan", help="execution plan file (SiddhiQL)")
    p.add_argument(
        "--input",
        action="append",
        required=True,
        metavar="STREAM=PATH",
        help="a dataset for an imported stream (repeat for each stream)",
    )
    p.add_argument("--output", required=True, metavar="DIR", help="output directory")
    p.add_argument(
        "--format",
        choices=("parquet", "jsonl", "csv"),
        default="parquet",
        help="output format (default parquet)",
    )
    p.add_argument(
        "--spark-master", default=None, help="local[N] (default), 'embedded' or spark://host:port"
    )
    p.add_argument(
        "--executors",
        type=int,
        default=None,
        help="executors (one core each) or local threads; default the CPUs",
    )
    p.add_argument("--timestamp-column", default="timestamp", help="default: timestamp")
    p.add_argument("--tenant", default="-1234", help="tenant id in the application name")
    p.add_argument(
        "--allow-nulls",
        action="store_true",
        help="accept null attribute values (never in the timestamp)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty DIR")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=main)


def main(args, stdout=None, stderr=None):
    """The `cep backtest` verb; returns the exit code (2 bad plan or input, 1 job failed)."""
    from cep.backtest.exceptions import BacktestError, InputError, SpecError
    from cep.backtest.inputs import parse_spec
    from cep.backtest.job import run_backtest
    from cep.backtest.progress import Progress

    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        with open(args.plan, encoding="utf-8") as f:
            text = f.read()
        specs = [parse_spec(s) for s in args.input]
        summary = run_backtest(
            text,
            specs,
            args.output,
            fmt=args.format,
            ts_column=args.timestamp_column,
            tenant=args.tenant,
            master=args.spark_master,
            executors=args.executors,
            allow_nulls=args.allow_nulls,
            overwrite=args.overwrite,
            progress=None if args.no_progress else (lambda sc, n: Progress(sc, n, stream=err)),
        )
    except OSError as exc:
        print(f"cep backtest: {exc}", file=err)
        return 2
    except SiddhiQLError as exc:
        print(f"{args.plan}: {exc}", file=err)
        return 2
    except (InputError, SpecError) as exc:
        print(f"cep backtest: {exc}", file=err)
        return 2
    except (BacktestError, CepError) as exc:
        print(f"cep backtest: {exc}", file=err)
        return 1
    out.write(
        json.dumps(summary.to_json(), indent=2) + "\n" if args.json else summary.text() + "\n"
    )
    return 0
