"""Shared bits of the `cep login|user|tenant|token` verbs: the --manager option and a JSON call
to the manager with the stored token."""

import json
import os
import sys

from cep.cli.plan import DEFAULT_MANAGER, CliError, request


def manager_option(parser):
    parser.add_argument(
        "--manager",
        default=os.environ.get("CEP_MANAGER_URL", DEFAULT_MANAGER),
        help=f"manager URL, or several: URL1,URL2 (default {DEFAULT_MANAGER}) "
        f"[env: CEP_MANAGER_URL]",
    )
    parser.add_argument("--json", action="store_true", help="print the manager's JSON")


def call(args, method, path, body=None):
    data = json.dumps(body) if body is not None else None
    return request(args.manager, method, "/api/v1" + path, data, content_type="application/json")


def run_action(args, fn):
    """Run fn(args) -> (result, human text); print one of them; 1 on a CliError."""
    try:
        result, text = fn(args)
    except CliError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2) if getattr(args, "json", False) else text)
    return 0


def read_password(args, prompt="Password: "):
    """The password from stdin (--password-stdin, first line) or a prompt without echo."""
    if getattr(args, "password_stdin", False):
        return sys.stdin.readline().rstrip("\r\n")
    import getpass

    return getpass.getpass(prompt)
