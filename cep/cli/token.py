"""Manage API tokens (your own; a super admin's for anyone): create (shown once), list, revoke."""

from cep.cli.auth_common import call, manager_option, run_action


def subparser_hook(subparsers):
    p = subparsers.add_parser("token", help=__doc__.splitlines()[0], description=__doc__)
    verbs = p.add_subparsers(dest="token_verb", metavar="ACTION", required=True)
    create = verbs.add_parser("create", help="create a token and print it (shown once)")
    create.add_argument("--label", default="", help="what the token is for")
    create.add_argument("--user", help="another user's token (super admin)")
    listing = verbs.add_parser("list", help="list tokens (ids and labels, never the secret)")
    listing.add_argument("--user", help="another user's tokens (super admin)")
    revoke = verbs.add_parser("revoke", help="revoke a token by its id")
    revoke.add_argument("id")
    for sp in (create, listing, revoke):
        manager_option(sp)
    p.set_defaults(func=run)


def run(args):
    return run_action(args, ACTIONS[args.token_verb])


def _create(args):
    body = {"label": args.label, **({"user": args.user} if args.user else {})}
    result = call(args, "POST", "/tokens", body)
    return result, result["token"]


def _list(args):
    result = call(args, "GET", "/tokens" + (f"?user={args.user}" if args.user else ""))
    rows = [f"{'ID':<14} {'USER':<20} {'CREATED':<22} LABEL"]
    rows += [
        f"{t['id']:<14} {t['user']:<20} {t['created']:<22} {t['label']}" for t in result["tokens"]
    ]
    return result, "\n".join(rows)


def _revoke(args):
    return call(args, "DELETE", f"/tokens/{args.id}"), f"Revoked token {args.id}"


ACTIONS = {"create": _create, "list": _list, "revoke": _revoke}
