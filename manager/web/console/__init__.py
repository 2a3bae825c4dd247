"""The web console: server-rendered pages under /console (plans, editor, plan details, status,
try-it, simulator) and the console's own JSON routes under /api/v1 (try, simulate).

Every asset ships in manager/web/static (CodeMirror 5 is vendored there): nothing is fetched
from the internet at run time. Jinja autoescapes every template, so plan names, descriptions
and texts are shown as text, never as markup."""

from flask import Blueprint, redirect, url_for

from manager.web.console import errors, nav


def register(app):
    """Register the console pages, its JSON routes, and `/` -> `/console/`."""
    from manager.web.console import api, plan_views, status_views, tools_views

    # a blueprint per app: routes cannot be added to one already registered (a second
    # create_app in the same process, as every test does, failed)
    bp = Blueprint("console", __name__, url_prefix="/console")
    for module in (plan_views, status_views, tools_views):
        module.register(bp)
    errors.register(bp)
    nav.register(bp)
    app.register_blueprint(bp)
    app.register_blueprint(api.bp)
    app.add_url_rule("/", "root", lambda: redirect(url_for("console.index")))
    app.add_url_rule("/favicon.ico", "favicon", lambda: app.send_static_file("console/favicon.svg"))
