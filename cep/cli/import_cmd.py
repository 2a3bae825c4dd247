"""Import a CEP 4.0 deployment as plans with @source/@sink and their @map.

The deployment is a folder with eventstreams/, eventreceivers/, eventpublishers/,
executionplans/, or a .car archive."""

import os
import sys

from cep.cli.plan import DEFAULT_MANAGER, CliError, request
from manager.store.base import SUPER_TENANT


def subparser_hook(subparsers):
    p = subparsers.add_parser("import", help=__doc__.splitlines()[0], description=__doc__)
    p.add_argument("deployment", help="CEP 4.0 deployment folder or .car archive")
    p.add_argument(
        "--out",
        help="folder for the converted .siddhiql plans (default: ./imported)",
        default="imported",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="only report what would be converted; write and deploy nothing",
    )
    p.add_argument("--deploy", action="store_true", help="also add the plans to the manager")
    p.add_argument(
        "--manager",
        default=os.environ.get("CEP_MANAGER_URL", DEFAULT_MANAGER),
        help=f"manager URL for --deploy (default {DEFAULT_MANAGER}) [env: CEP_MANAGER_URL]",
    )
    p.add_argument("--tenant", type=int, default=SUPER_TENANT, help="tenant id (default -1234)")
    p.set_defaults(func=run)


def run(args):
    """Print one report line per problem (`level: file: element: message`), then one line per
    plan; exit 0 when everything converted, 1 when some receiver, publisher or plan was not."""
    from cep.importer import import_deployment

    try:
        result = import_deployment(args.deployment)
    except (FileNotFoundError, OSError) as exc:
        print(f"cep import: {exc}", file=sys.stderr)
        return 1
    for problem in result.problems:
        print(problem)
    failed = bool(result.errors)
    for plan in result.plans:
        state = "" if plan.valid else " (does not compile, not written)"
        print(
            f"plan {plan.name} from {plan.file}: {plan.sources} source(s), "
            f"{plan.sinks} sink(s){state}"
        )
        if args.check or not plan.valid:
            continue
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"{plan.name}.siddhiql")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(plan.text)
        print(f"  wrote {path}")
        if args.deploy:
            try:
                added = request(
                    args.manager, "POST", f"/api/v1/tenants/{args.tenant}/plans", plan.text
                )
                print(f"  deployed {added['name']}: topology {added['topology']} {added['state']}")
            except CliError as exc:
                failed = True
                print(f"  not deployed: {exc}")
    print(
        f"{len(result.plans)} plan(s), {len(result.errors)} error(s), "
        f"{sum(p.level == 'warning' for p in result.problems)} warning(s)"
        + (" (check only)" if args.check else "")
    )
    return 1 if failed else 0
