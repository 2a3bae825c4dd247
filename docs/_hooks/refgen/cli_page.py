"""The command-line reference: every `cep` command and subcommand with its options, the text
`--help` prints, from the argparse parsers of cep/cli (cep.cli.main.build_parser)."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Iterator

from refgen.markdown import cell, code, table

WIDTH = 80  # the terminal width the help is formatted for (fits the page without scrolling)

INTRO = """# Command line

`cep` is the one command (`.venv/bin/cep`, installed by `bin/cep.sh` and `bin/test.sh`).
Below is what `cep COMMAND --help` prints for every command and subcommand, written from the
command's parser at each build of the site (for a terminal {width} columns wide, with no
`CEP_*` variable set: some defaults come from the environment).

Scripts: `bin/cep.sh` (the local system: manager, worker and an embedded Spark cluster;
`bin/cep.sh --help`), `bin/cep-worker.sh` (a worker; its flags are `cep worker`'s) and
`bin/test.sh` (the test suite; its arguments go to pytest).
"""


@contextlib.contextmanager
def help_environment() -> Iterator[None]:
    """A fixed terminal width and no CEP_* variables (parsers read defaults from them), so
    the page is the same on every machine."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("CEP_") or k == "COLUMNS"}
    for key in saved:
        del os.environ[key]
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        yield
    finally:
        del os.environ["COLUMNS"]
        os.environ.update(saved)


def root_parser() -> argparse.ArgumentParser:
    """`cep`'s parser, built as `cep` builds it."""
    from cep.cli.main import build_parser

    return build_parser()


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[argparse.ArgumentParser, str]]:
    """The parser's direct subcommands with their one-line help, in `--help`'s order."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            out += [(sub, helps.get(name, "")) for name, sub in action.choices.items()]
    return out


def walk(
    parser: argparse.ArgumentParser, depth: int = 0
) -> Iterator[tuple[argparse.ArgumentParser, int]]:
    """The parser and every subcommand's below it, depth first."""
    yield parser, depth
    for sub, _ in subcommands(parser):
        yield from walk(sub, depth + 1)


def anchor(parser: argparse.ArgumentParser) -> str:
    return parser.prog.replace(" ", "-")


def render() -> str:
    """The command-line reference page."""
    with help_environment():
        parser = root_parser()
        out = [INTRO.format(width=WIDTH)]
        out.append(
            table(
                ["command", "what"],
                [
                    [f"[{code(sub.prog)}](#{anchor(sub)})", cell(helptext)]
                    for sub, helptext in subcommands(parser)
                ],
            )
        )
        out.append("")
        for sub, depth in walk(parser):
            level = "##" if depth < 2 else "###"  # `cep` and its commands, then subcommands
            out += [
                f"{level} {sub.prog} {{#{anchor(sub)}}}",
                "",
                "```text",
                sub.format_help().rstrip("\n"),
                "```",
                "",
            ]
    return "\n".join(out)
