"""Check a SiddhiQL execution plan: print "valid", or the positioned error (exit 2)."""

import sys

from cep.errors import SiddhiQLError


def subparser_hook(subparsers):
    parser = subparsers.add_parser("validate", help=__doc__.splitlines()[0], description=__doc__)
    parser.add_argument("plans", metavar="PLAN", nargs="+", help="plan file(s) ('-' reads stdin)")
    parser.add_argument(
        "--require-name", action="store_true", help="also require @Plan:name, as deploying does"
    )
    parser.set_defaults(func=run)


def _read(path):
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def run(args):
    """Exit 0 and print "valid" (per plan when several), or print `PLAN:line:column: Kind:
    message` and a snippet for each rejected plan and exit 2."""
    results = [_check(path, args.require_name) for path in args.plans]
    for path, ok in zip(args.plans, results):
        if ok:
            print(f"{path}: valid" if len(args.plans) > 1 else "valid")
    return 0 if all(results) else 2


def _check(path, require_name):
    import cep.compiler

    try:
        text = _read(path)
    except OSError as exc:
        print(f"{path}: cannot read: {exc.strerror}", file=sys.stderr)
        return False
    try:
        plan = cep.compiler.compile(text)
        if require_name:
            cep.compiler.require_plan_name(plan)
    except SiddhiQLError as exc:
        print(format_error(path, exc), file=sys.stderr)
        return False
    return True


def format_error(path, exc):
    """`path:line:column: Kind: message` then the caret snippet."""
    where = f"{path}:{exc.line}:{exc.column}" if exc.span else path
    snippet = exc.snippet()
    head = f"{where}: {type(exc).__name__.rstrip('_')}: {exc.message}"
    return head + (f"\n{snippet}" if snippet else "")
