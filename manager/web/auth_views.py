"""Console login and logout: `GET|POST /console/login`, `POST /console/logout`.

The login form carries a CSRF token of a pre-login session; a successful login starts a fresh
session (new CSRF token) and goes back to the page asked for (a /console path only)."""

import secrets

from flask import Blueprint, current_app, g, redirect, render_template, request, session

from manager.auth import csrf, sessions
from manager.auth.exceptions import ThrottledError

bp = Blueprint("console_auth", __name__, url_prefix="/console")


def auth():
    return current_app.config["MANAGER"].auth


def _next_page(value):
    """Only a local console path (no //host, no scheme) is followed after login."""
    if (
        isinstance(value, str)
        and value.startswith("/console")
        and "//" not in value
        and "\\" not in value
    ):
        return value
    return "/console/"


def _form(status=200, error="", user=""):
    if not session.get("csrf"):
        session["csrf"] = secrets.token_urlsafe(32)
    return render_template(
        "console/login.html",
        csrf_token=session["csrf"],
        error=error,
        user=user,
        next=_next_page(request.values.get("next")),
    ), status


@bp.route("/login", methods=["GET", "POST"])
def login():
    if request.method == "GET":
        return _form()
    csrf.check()
    name = request.form.get("user", "")
    try:
        record = auth().login(name, request.form.get("password", ""), request.remote_addr)
    except ThrottledError as exc:
        resp = _form(429, str(exc), name[:64])
        return resp[0], resp[1], {"Retry-After": str(exc.retry_after)}
    if record is None:
        return _form(401, "Wrong user name or password.", name[:64])
    sessions.start(record["name"], record.get("epoch", 0))
    return redirect(_next_page(request.form.get("next")))


@bp.post("/logout")
def logout():
    auth().end_sessions(g.principal.name)  # a copy of the cookie elsewhere dies too
    sessions.end()  # audited by auth_guard.audit_change
    return redirect("/console/login")
