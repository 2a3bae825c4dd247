"""Run an execution plan over a JSON-lines event file and print its output as JSON lines.

Input lines are {"stream": "S", "timestamp": 1000, "data": [...]}; a line with only
{"timestamp": T} advances the playback clock. Every event inserted into a stream the input
does not feed is printed as {"stream", "timestamp", "data", "expired"}. Bad input lines are
reported on stderr with their line number (exit 1 with --on-error fail); a rejected plan
exits 2 with the positioned error."""

import io
import json
import sys

from cep.errors import CepError, SiddhiQLError


def subparser_hook(subparsers):
    p = subparsers.add_parser("run", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("plan", help="execution plan file (SiddhiQL)")
    p.add_argument("--events", required=True, help="input events, one JSON object a line")
    p.add_argument(
        "--playback",
        action="store_true",
        default=None,
        help="event time from the timestamps (also set by @Plan:playback)",
    )
    p.add_argument(
        "--on-error",
        choices=("skip", "fail"),
        default="skip",
        help="what a bad input line does: skip it (default) or stop with exit 1",
    )
    p.set_defaults(func=main)


def main(args, stdout=None, stderr=None):
    """The `cep run` verb; returns the exit code."""
    import cep
    from cep.engine.offline import run, run_bytes
    from cep.model import AttrType

    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        with open(args.plan, encoding="utf-8") as f:
            text = f.read()
        with open(args.events, "rb") as f:
            data = f.read()
    except OSError as exc:
        print(f"cep run: {exc}", file=err)
        return 2
    try:
        plan = cep.compile(text)
    except SiddhiQLError as exc:
        print(f"{args.plan}: {exc}", file=err)
        return 2

    pending = []

    def emit(event):
        pending.append(event)

    def flush():
        """Print a line's output once the line is processed: an object value (a map) that a
        later query changes prints changed, as Siddhi's callbacks show it."""
        for event in pending:
            out.write(json.dumps(event, default=str) + "\n")  # objects by their Java form
        pending.clear()

    def on_bad(bad):
        print(f"{args.events}: {bad}", file=err)

    try:
        if any(a.type == AttrType.OBJECT for st in plan.streams for a in st.attributes):
            # object values (maps) may change after they are emitted: print each line's
            # output once the line is processed, as Siddhi's callbacks show it
            lines = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").readlines()
            try:
                ok = run(
                    plan,
                    lines,
                    emit,
                    on_bad,
                    playback=args.playback,
                    on_error=args.on_error,
                    after_line=flush,
                )
            finally:
                flush()
        else:  # the output's UTF-8 bytes straight to the binary stream under `out`
            raw = getattr(out, "buffer", None)
            if raw is not None:
                out.flush()
            write = raw.write if raw is not None else (lambda b: out.write(b.decode()))
            ok = run_bytes(
                plan, data, write, on_bad, playback=args.playback, on_error=args.on_error
            )
    except CepError as exc:
        print(f"{args.plan}: {exc}", file=err)
        return 2
    return 0 if ok else 1
