"""Manage the tenants of a CEP manager (super admin): add, list."""

from cep.cli.auth_common import call, manager_option, run_action


def subparser_hook(subparsers):
    p = subparsers.add_parser("tenant", help=__doc__.splitlines()[0], description=__doc__)
    verbs = p.add_subparsers(dest="tenant_verb", metavar="ACTION", required=True)
    add = verbs.add_parser("add", help="add a tenant")
    add.add_argument("id", type=int, help="tenant id (32-bit integer)")
    add.add_argument("--name", default="", help="a display name")
    listing = verbs.add_parser("list", help="list tenants")
    for sp in (add, listing):
        manager_option(sp)
    p.set_defaults(func=run)


def run(args):
    def action(args):
        if args.tenant_verb == "add":
            t = call(args, "POST", "/tenants", {"id": args.id, "name": args.name})
            return t, f"Added tenant {t['id']}"
        result = call(args, "GET", "/tenants")
        rows = [f"{'TENANT':<12} NAME"] + [f"{t['id']:<12} {t['name']}" for t in result["tenants"]]
        return result, "\n".join(rows)

    return run_action(args, action)
