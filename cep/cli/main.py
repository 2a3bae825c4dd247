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


def build_parser(only: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `cep` parser with every verb, or with the verbs of the modules in `only`."""
    parser = argparse.ArgumentParser(prog="cep", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--log-level", default="WARNING", help="root log level (DEBUG, INFO, WARNING, ERROR)"
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in VERB_MODULES if only is None else only:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # verb not built yet
            raise
        module.subparser_hook(subparsers)
    return parser


def verb_module(argv: Sequence[str]) -> str | None:
    """The module of the verb `argv` names (its first argument that is not the global
    `--log-level` option), or None (no verb, an unknown one, another option first). Only
    that module is imported then: each verb's imports (Spark, Flask, ...) cost a start-up
    of about 0.5 s of CPU that `cep run` does not need."""
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--log-level":
            args = args[1:]
        elif not arg.startswith("--log-level="):
            name = "cep.cli.import_cmd" if arg == "import" else f"cep.cli.{arg}"
            known = name in VERB_MODULES and arg != "import_cmd" and not arg.startswith("-")
            return name if known else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    module = verb_module(argv)
    parser = build_parser(None if module is None else [module])
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
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
