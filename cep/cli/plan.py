"""Manage execution plans on a CEP manager: add, edit, remove, list, show, status, query-plan."""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request

from cep.cli import credentials
from manager.status import status_text
from manager.store.base import SUPER_TENANT

DEFAULT_MANAGER = "http://127.0.0.1:9763"


class CliError(Exception):
    """A request to the manager failed; the message is what the user sees."""


def _global_options(parser, inherited):
    """--manager, --tenant and --json; on an action (`inherited`) they default to the value
    given before the action, so `cep plan --manager URL list` and `cep plan list --manager URL`
    mean the same."""

    def default(value):
        return argparse.SUPPRESS if inherited else value

    parser.add_argument(
        "--manager",
        default=default(os.environ.get("CEP_MANAGER_URL", DEFAULT_MANAGER)),
        help=f"manager URL, or several: URL1,URL2 (a manager group; the first that "
        f"answers, writes follow the leader) (default {DEFAULT_MANAGER}) "
        f"[env: CEP_MANAGER_URL]",
    )
    parser.add_argument(
        "--tenant", type=int, default=default(SUPER_TENANT), help="tenant id (default -1234)"
    )
    parser.add_argument(
        "--json", action="store_true", default=default(False), help="print the manager's JSON"
    )


ACTIONS = (
    ("add", "add and deploy a plan from a .siddhiql file", ["file"]),
    ("edit", "replace a plan (kills and redeploys its topology)", ["name", "file"]),
    ("remove", "remove a plan and kill its topology", ["name"]),
    ("list", "list the tenant's plans", []),
    ("show", "print a plan's SiddhiQL", ["name"]),
    ("status", "topology state, inflow and outflow connections", ["name"]),
    ("query-plan", "print the XML query plan", ["name"]),
)


def subparser_hook(subparsers):
    p = subparsers.add_parser("plan", help=__doc__.splitlines()[0], description=__doc__)
    _global_options(p, inherited=False)
    verbs = p.add_subparsers(dest="plan_verb", metavar="ACTION", required=True)
    for name, helptext, args in ACTIONS:
        sp = verbs.add_parser(name, help=helptext)
        for a in args:
            sp.add_argument(a)
        _global_options(sp, inherited=True)
    p.set_defaults(func=run)


def request(base, method, path, body=None, raw=False, content_type="text/plain; charset=utf-8"):
    """Call the manager with the user's token (CEP_TOKEN or `cep login`); returns parsed JSON
    (or text); raises CliError with its message. `base` may list several managers
    (`URL1,URL2`): the first that answers is used, a follower's 307 is followed to
    the leader, and a group between leaders (503 NoLeader) is asked again for up to 20 s."""
    urls = [u.strip().rstrip("/") for u in base.split(",") if u.strip()]
    data = body.encode() if isinstance(body, str) else None
    headers = {"Content-Type": content_type}
    token = credentials.token_for(base) or next(
        (t for t in map(credentials.token_for, urls) if t), None
    )
    if token:
        headers["Authorization"] = f"Bearer {token}"
    unreachable = []
    for url in urls:
        try:
            text = _send(url + path, method, data, headers, base)
        except _Unreachable as exc:
            unreachable.append(f"{url}: {exc}")
            continue
        return text if raw else json.loads(text)
    raise CliError(f"cannot reach the manager at {'; '.join(unreachable)}")


class _Unreachable(Exception):
    """The manager did not answer at all (try the next one of the list)."""


def _send(url, method, data, headers, base, hops=3):
    deadline = time.monotonic() + 20.0
    while True:
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.read().decode()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")
            if exc.code in (307, 308) and exc.headers.get("Location") and hops > 0:
                url, hops = exc.headers["Location"], hops - 1  # a follower: go to the leader
                continue
            if exc.code == 503 and '"NoLeader"' in body and time.monotonic() < deadline:
                time.sleep(1.0)  # the group is electing a leader
                continue
            text = _error_text(body, exc.code)
            if exc.code == 401:
                text += (
                    f"\n(log in first: cep login --manager {base} --user NAME, or set CEP_TOKEN)"
                )
            raise CliError(text) from None
        except urllib.error.URLError as exc:
            raise _Unreachable(str(exc.reason)) from None
        except (ConnectionError, TimeoutError) as exc:
            raise _Unreachable(str(exc)) from None


def _error_text(text, code):
    try:
        err = json.loads(text)
    except ValueError:
        return f"HTTP {code}: {text.strip()}"
    where = f"line {err['line']}, column {err['column']}: " if "line" in err else ""
    lines = [f"error: {where}{err.get('message', text)}"]
    for e in err.get("errors", [])[:5]:
        if e.get("snippet"):
            lines.append(e["snippet"])
    return "\n".join(lines)


def _read(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None


def run(args):
    base, as_json = args.manager, bool(args.json)
    plans = f"/api/v1/tenants/{args.tenant}/plans"
    verb = args.plan_verb
    try:
        if verb == "query-plan":
            print(request(base, "GET", f"{plans}/{args.name}/query-plan", raw=True), end="")
            return 0
        result = _call(base, plans, verb, args)
    except CliError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2) if as_json else _human(verb, result))
    return 0


def _call(base, plans, verb, args):
    if verb == "add":
        return request(base, "POST", plans, _read(args.file))
    if verb == "edit":
        return request(base, "PUT", f"{plans}/{args.name}", _read(args.file))
    if verb == "remove":
        return request(base, "DELETE", f"{plans}/{args.name}")
    if verb == "list":
        return request(base, "GET", plans)
    if verb == "show":
        return request(base, "GET", f"{plans}/{args.name}")
    return request(base, "GET", f"{plans}/{args.name}/status")


def _human(verb, result):
    if verb == "list":
        rows = [f"{'NAME':<30} {'TOPOLOGY':<40} STATE"]
        rows += [f"{p['name']:<30} {p['topology']:<40} {p['state']}" for p in result["plans"]]
        return "\n".join(rows) if result["plans"] else "No execution plans."
    if verb == "show":
        return result["text"].rstrip("\n")
    if verb == "status":
        return status_text(result)
    if verb == "remove":
        return f"Removed {result['name']} (tenant {result['tenant']})"
    return f"{'Added' if verb == 'add' else 'Edited'} {result['name']}: topology {result['topology']} {result['state']}"
