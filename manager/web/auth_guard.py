"""Every request of the manager's app passes here first: who sends it (API token,
console session or the workers' cluster secret) and whether that principal may.

401 without credentials (console pages: a redirect to the login page), 403 for a role that may
not, 404 for another tenant's resources (their existence does not leak), 403 for a console
session's state-changing request without its CSRF token. State-changing requests are written
to the audit log with their outcome."""

from urllib.parse import quote

from flask import current_app, g, redirect, request

from manager.auth import csrf, sessions
from manager.auth.exceptions import ForbiddenError, HiddenError, NotAuthenticatedError
from manager.auth.roles import SUPER_ADMIN, WORKER, Principal
from manager.exceptions import BadTenantError
from manager.store.base import SUPER_TENANT, parse_tenant

# the documentation site is public: it is the project's own documentation, and a user may
# need it before having an account
PUBLIC = {"static", "favicon", "root", "console_auth.login", "api_users.login", "docs_site.page"}
WORKER_ALLOWED = {"api_worker.deployments", "api_plans.manager_info"}
SUPER_ONLY = {
    "api_worker.deployments",
    "api_users.list_users",
    "api_users.add_user",
    "api_users.remove_user",
    "api_users.list_tenants",
    "api_users.add_tenant",
    "api_docs.prometheus_metrics",
}  # /metrics labels every tenant: operators only
SELF_SERVICE = {
    "api_users.whoami",
    "api_users.create_token",
    "api_users.list_tokens",
    "api_users.revoke_token",
    "api_users.set_password",
    "console_auth.logout",
}
READ_ONLY_POSTS = {"api_validate.validate"}
TENANT_ARG = {"api_validate.validate", "api_worker.deployments"}  # tenant in ?tenant=
ACTIONS = {
    "api_plans.add_plan": "plan.add",
    "api_plans.edit_plan": "plan.edit",
    "api_plans.remove_plan": "plan.remove",
    "api_users.add_user": "user.add",
    "api_users.remove_user": "user.remove",
    "api_users.add_tenant": "tenant.add",
    "api_users.create_token": "token.create",
    "api_users.revoke_token": "token.revoke",
    "api_users.set_password": "user.password",
    "console_api.simulate_events": "plan.simulate",
    "console_api.try_it": "plan.try",
    "console_auth.logout": "logout",
}
INSECURE = Principal("anonymous", SUPER_TENANT, SUPER_ADMIN, "insecure")


def auth():
    return current_app.config["MANAGER"].auth


def register(app):
    app.before_request(check_request)
    app.after_request(audit_change)


def check_request():
    endpoint = request.endpoint
    if endpoint is None or endpoint in PUBLIC:
        return None
    principal = authenticate()
    if principal is None:
        if _is_console_page():
            return redirect("/console/login?next=" + quote(request.full_path.rstrip("?")))
        raise NotAuthenticatedError(
            "authentication required: send Authorization: Bearer "
            "<token> (cep login) or log in to the console"
        )
    g.principal = principal
    if principal.via == "session":
        csrf.check()
    authorize(principal, endpoint)
    return None


def authenticate():
    """The request's Principal, or None without (valid) credentials."""
    service = auth()
    if not service.enabled:
        return INSECURE
    header = request.headers.get("Authorization", "")
    if header[:7].lower() == "bearer ":
        return service.from_token(header[7:].strip())
    secret = request.headers.get("X-CEP-Cluster-Secret")
    if secret:
        return service.from_token(secret)
    current = sessions.current_user(service.idle_secs)
    return service.from_session(*current) if current else None


def authorize(principal, endpoint):
    """Raise ForbiddenError/HiddenError when `principal` may not call `endpoint`."""
    if principal.role == WORKER:
        if endpoint not in WORKER_ALLOWED:
            raise ForbiddenError("the cluster secret only serves plan sync (/deployments)")
        return
    if endpoint in SELF_SERVICE:
        return
    if endpoint in SUPER_ONLY and not principal.is_super:
        raise ForbiddenError(f"only a {SUPER_ADMIN} may do this")
    tenant = _request_tenant(endpoint)
    if tenant is not None and not principal.sees(tenant):
        raise HiddenError("not found")
    if request.method not in csrf.SAFE_METHODS and endpoint not in READ_ONLY_POSTS:
        if not principal.may_write(principal.tenant if tenant is None else tenant):
            raise ForbiddenError(f"role {principal.role} may not change anything")


def _request_tenant(endpoint):
    value = (request.view_args or {}).get("tenant")
    if value is None and endpoint in TENANT_ARG:
        value = request.args.get("tenant")
    if value is None:
        return None
    try:
        return parse_tenant(value)
    except BadTenantError:
        return None  # the view answers 400


def _is_console_page():
    return (
        request.method == "GET"
        and (request.blueprint or "").startswith("console")
        and not request.path.startswith("/api/")
    )


def audit_change(response):
    """Audit every state-changing request that reached a known endpoint."""
    if request.method in csrf.SAFE_METHODS or request.endpoint in (
        None,
        "api_users.login",
        "console_auth.login",
    ):
        return response
    principal = g.get("principal")
    args = request.view_args or {}
    target = "/".join(str(args[k]) for k in ("tenant", "name", "user", "token_id") if k in args)
    target = target or _body_target(request.endpoint)
    if request.endpoint == "api_plans.add_plan" and response.is_json:  # the added plan's name
        added = response.get_json(silent=True)
        if isinstance(added, dict) and isinstance(added.get("name"), str):
            target = f"{target}/{added['name']}"
    outcome = "ok" if response.status_code < 400 else f"refused {response.status_code}"
    auth().audit.record(
        ACTIONS.get(request.endpoint, request.endpoint),
        outcome,
        user=principal.name if principal else None,
        tenant=principal.tenant if principal else None,
        target=target or None,
        remote=request.remote_addr,
    )
    return response


def _body_target(endpoint):
    """User/tenant creation: the user name or tenant id from the JSON body."""
    data = request.get_json(silent=True) if request.is_json else None
    if not isinstance(data, dict):
        return None
    named = data.get("name") if endpoint == "api_users.add_user" else data.get("id")
    return str(named)[:100] if named is not None else None
