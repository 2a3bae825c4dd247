"""Manage the users of a CEP manager (super admin): add, list, remove, passwd."""

from cep.cli.auth_common import call, manager_option, read_password, run_action
from manager.auth.roles import ROLES
from manager.store.base import SUPER_TENANT


def subparser_hook(subparsers):
    p = subparsers.add_parser("user", help=__doc__.splitlines()[0], description=__doc__)
    verbs = p.add_subparsers(dest="user_verb", metavar="ACTION", required=True)
    add = verbs.add_parser("add", help="add a user (password from a prompt or stdin)")
    add.add_argument("name")
    add.add_argument("--tenant", type=int, default=SUPER_TENANT, help="the user's tenant")
    add.add_argument("--role", choices=ROLES, default="viewer", help="default viewer")
    add.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    verbs.add_parser("list", help="list users")
    remove = verbs.add_parser("remove", help="remove a user and revoke its tokens")
    remove.add_argument("name")
    passwd = verbs.add_parser(
        "passwd",
        help="change a user's password (your own: give the "
        "current one too; it revokes your other tokens)",
    )
    passwd.add_argument("name")
    passwd.add_argument(
        "--password-stdin",
        action="store_true",
        help="read it from stdin (with --current: the current password on the "
        "first line, the new one on the second)",
    )
    passwd.add_argument(
        "--current",
        action="store_true",
        help="ask for the current password first (needed unless a super admin sets another user's)",
    )
    for sp in (add, remove, passwd, verbs.choices["list"]):
        manager_option(sp)
    p.set_defaults(func=run)


def run(args):
    return run_action(args, ACTIONS[args.user_verb])


def _add(args):
    body = {
        "name": args.name,
        "tenant": args.tenant,
        "role": args.role,
        "password": read_password(args),
    }
    user = call(args, "POST", "/users", body)
    return user, f"Added user {user['name']} ({user['role']}, tenant {user['tenant']})"


def _list(args):
    result = call(args, "GET", "/users")
    rows = [f"{'USER':<24} {'TENANT':<12} ROLE"]
    rows += [f"{u['name']:<24} {u['tenant']:<12} {u['role']}" for u in result["users"]]
    return result, "\n".join(rows)


def _remove(args):
    return call(args, "DELETE", f"/users/{args.name}"), f"Removed user {args.name}"


def _passwd(args):
    body = {}
    if args.current:
        body["current"] = read_password(args, "Current password: ")
    body["password"] = read_password(args, "New password: ")
    result = call(args, "PUT", f"/users/{args.name}/password", body)
    return result, f"Password changed; {result.get('tokens_revoked', 0)} other token(s) revoked"


ACTIONS = {"add": _add, "list": _list, "remove": _remove, "passwd": _passwd}
