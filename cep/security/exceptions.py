"""Errors of the shared security helpers (cep/security)."""


class SecurityError(Exception):
    """Root of the security helpers' errors."""


class CurveKeyError(SecurityError):
    """The cluster CURVE key pair is missing, unreadable or not configured."""
