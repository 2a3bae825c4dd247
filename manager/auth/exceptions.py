"""Errors of manager.auth, under one root (itself a ManagerError, so the REST API answers
them as JSON with their status)."""

from manager.exceptions import ManagerError


class AuthError(ManagerError):
    """Root of the authentication and authorization errors."""

    status = 400


class NotAuthenticatedError(AuthError):
    """No valid credentials (token, session or cluster secret) came with the request."""

    status = 401


class ForbiddenError(AuthError):
    """The principal's role may not do this."""

    status = 403


class CsrfError(AuthError):
    """A state-changing request of a console session came without its CSRF token."""

    status = 403


class HiddenError(AuthError):
    """Another tenant's resource: answered as not found, so its existence does not leak."""

    status = 404


class BadUserError(AuthError):
    """A user, tenant or token request is malformed (name, role, password, tenant)."""

    status = 400


class UnknownUserError(AuthError):
    """No user (or token) of that name/id."""

    status = 404


class UserExistsError(AuthError):
    """A user or tenant of that name/id already exists."""

    status = 409


class ThrottledError(AuthError):
    """Too many failed logins from this address lately: refused for `retry_after` s."""

    status = 429

    def __init__(self, message, retry_after=1):
        super().__init__(message)
        self.retry_after = retry_after
