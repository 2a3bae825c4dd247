"""What every console page shows around its content: the tenants of the picker and the
selected tenant (from the URL, else the `tenant` cookie, else the super tenant)."""

from flask import current_app, g, request

from manager.store.base import SUPER_TENANT, parse_tenant
from manager.exceptions import BadTenantError
from manager.web.console.formats import duration, iso_time


def manager():
    return current_app.config["MANAGER"]


def known_tenants():
    """Tenants with a plan (store and compiled plans), plus the super tenant; sorted."""
    m = manager()
    tenants = {SUPER_TENANT} | {t for t, _ in list(m.plans.compiled)}
    tenants |= {t["id"] for t in m.auth.directory.tenants()}  # created tenants
    try:
        tenants |= set(m.store.tenants())
    except Exception:  # a store that cannot list tenants still leaves the page usable
        current_app.logger.warning("cannot list tenants of the plan store", exc_info=True)
    return sorted(tenants)


def selected_tenant():
    """The tenant of the URL, else the `tenant` cookie, else -1234."""
    value = (request.view_args or {}).get("tenant") or request.cookies.get("tenant")
    try:
        return parse_tenant(value) if value is not None else SUPER_TENANT
    except BadTenantError:
        return SUPER_TENANT


def register(bp):
    register_filters(bp)

    @bp.app_context_processor
    def console_context():
        if not request.blueprint or not request.blueprint.startswith("console"):
            return {}
        tenant = selected_tenant()
        tenants = known_tenants()
        if tenant not in tenants:
            tenants = sorted(tenants + [tenant])
        principal = g.get("principal")  # only the tenants this user may see
        if principal is not None and not principal.is_super:
            tenant = tenant if principal.sees(tenant) else principal.tenant
            tenants = [principal.tenant]
        return {"tenant": tenant, "tenants": tenants, "principal": principal}


def register_filters(bp):
    """Formatting of times, ages, rates and sizes in the templates."""

    def _num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    filters = {
        "console_time": iso_time,
        "seconds": lambda v: duration(v) if _num(v) else "",
        "rate": lambda v: f"{v:,.1f}" if _num(v) else "",
        "percent": lambda v: f"{v:.1f} %" if _num(v) else "",
        "bytes": lambda v: f"{v / 1048576:,.1f} MiB" if _num(v) else "",
    }
    for name, fn in filters.items():
        bp.add_app_template_filter(fn, name)
