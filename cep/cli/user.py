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
    passwd = verbs.add_parser("passwd", help="change a user's password")
    passwd.add_argument("name")
    passwd.add_argument("--password-stdin", action="store_true", help="read it from stdin")
    for sp in (add, remove, passwd, verbs.choices["list"]):
        manager_option(sp)
    p.set_defaults(func=run)


def run(args):
    return run_action(args, ACTIONS[args.user_verb])


def _add(args):
    body = {"name": args.name, "tenant": args.tenant, "role": args.role,
            "password": read_password(args)}
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
    body = {"password": read_password(args, "New password: ")}
    return call(args, "PUT", f"/users/{args.name}/password", body), "Password changed"


ACTIONS = {"add": _add, "list": _list, "remove": _remove, "passwd": _passwd}
