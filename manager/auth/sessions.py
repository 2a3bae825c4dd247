"""Console sessions: Flask's signed cookie session (secret key generated at first start in
`<data>/security/app-secret-key`, 0600), holding the user name, a CSRF token and the time of
the last request; a session idle longer than `security.session_idle_secs` is over."""

import secrets
import time

from flask import session

from cep.security.cluster_secret import _read_file

KEY_FILE = "app-secret-key"


def secret_key(data_dir):
    """The app's secret key, created (random, 0600) at first start; never a constant."""
    import os

    path = os.path.join(str(data_dir), "security", KEY_FILE)
    value = _read_file(path)
    if value:
        return value
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    value = secrets.token_hex(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    return value


def start(user, epoch=0):
    """Begin a session for `user` (a fresh CSRF token; any earlier session content dropped).
    `epoch` is the user's session epoch: logging out or a new password bumps it, which ends
    every cookie issued before (the cookie lives in the browser, so this is how it is revoked)."""
    session.clear()
    session.permanent = False
    session["user"] = user
    session["epoch"] = epoch
    session["csrf"] = secrets.token_urlsafe(32)
    session["seen"] = time.time()


def current_user(idle_secs):
    """(user name, epoch) of the session, or None (no session, or idle too long: cleared)."""
    user, seen = session.get("user"), session.get("seen")
    if not user or not isinstance(seen, (int, float)):
        return None
    now = time.time()
    if now - seen > idle_secs:
        session.clear()
        return None
    if now - seen > 30:  # refresh the idle clock (not on every request: fewer cookie writes)
        session["seen"] = now
    return user, session.get("epoch", 0)


def end():
    session.clear()
