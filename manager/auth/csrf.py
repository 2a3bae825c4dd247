"""CSRF tokens of console sessions: one per session, sent back by forms (`csrf_token` field)
and by the console's fetch calls (`X-CSRF-Token` header, read from a meta tag)."""

import hmac

from flask import request, session

from manager.auth.exceptions import CsrfError

SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))
HEADER = "X-CSRF-Token"


def token():
    """The session's CSRF token ("" without a session)."""
    return session.get("csrf", "")


def check():
    """Refuse a state-changing request whose CSRF token is missing or wrong."""
    if request.method in SAFE_METHODS:
        return
    given = request.headers.get(HEADER) or request.form.get("csrf_token", "")
    expected = token()
    if not expected or not given or not hmac.compare_digest(str(given), str(expected)):
        raise CsrfError("missing or wrong CSRF token (reload the page and try again)")
