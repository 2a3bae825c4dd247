"""`cep`: the command line of the CEP runtime.

Each verb is a module in this package (or a package named in VERB_MODULES) with a
`subparser_hook(subparsers)` that adds its parser and sets `func`; the module's docstring is
its help. Only this module calls sys.exit: library code raises.
"""
import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

# verb modules, in the order `cep --help` lists them
VERB_MODULES = (
    "cep.cli.run",
    "cep.cli.backtest",
    "cep.cli.validate",
    "cep.cli.extensions",
    "cep.cli.topology",
    "cep.cli.manager",
    "cep.cli.plan",
    "cep.cli.worker",
    "cep.cli.feed",
    "cep.cli.import_cmd",
    "cep.cli.login",
    "cep.cli.user",
    "cep.cli.tenant",
    "cep.cli.token",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cep", description=__doc__.splitlines()[0])
    parser.add_argument("--log-level", default="WARNING",
                        help="root log level (DEBUG, INFO, WARNING, ERROR)")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in VERB_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # verb not built yet
            raise
        module.subparser_hook(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code = args.func(args)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    return 0 if code is None else int(code)


if __name__ == "__main__":
    sys.exit(main())
