"""Log in to a CEP manager and keep an API token for later `cep` commands.

The password (prompt, or --password-stdin) is traded for a token, stored (mode 0600) in
$XDG_CONFIG_HOME/sparkcep/credentials.json (else ~/.config/...); CEP_TOKEN overrides it."""

from cep.cli import credentials
from cep.cli.auth_common import call, manager_option, read_password, run_action


def subparser_hook(subparsers):
    p = subparsers.add_parser("login", help=__doc__.splitlines()[0], description=__doc__)
    manager_option(p)
    p.add_argument("--user", required=True, help="user name")
    p.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from the first line of stdin (no prompt)",
    )
    p.add_argument(
        "--print-token",
        action="store_true",
        help="print the token instead of storing it (for scripts: CEP_TOKEN=...)",
    )
    p.set_defaults(func=run)


def run(args):
    def login(args):
        password = read_password(args)
        result = call(
            args, "POST", "/login", {"user": args.user, "password": password, "label": "cep login"}
        )
        if args.print_token:
            return result, result["token"]
        where = credentials.save(args.manager, result["user"], result["token"])
        shown = {k: v for k, v in result.items() if k != "token"}
        return shown, (
            f"Logged in to {args.manager} as {result['user']} ({result['role']}, "
            f"tenant {result['tenant']}); token stored in {where}"
        )

    return run_action(args, login)
