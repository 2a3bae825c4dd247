"""API tokens: random, shown once, stored as their SHA-256 (high-entropy secrets need no slow
hash). A token is `cep_<id>_<secret>`; the id names it for listing and revoking."""

import hashlib
import hmac
import secrets
import time

from manager.auth.exceptions import BadUserError, UnknownUserError

PREFIX = "cep_"


def digest(token):
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Tokens:
    """`tokens` records keyed by token id: {id, user, label, created, sha256}."""

    def __init__(self, records):
        self.records = records

    def create(self, user, label=""):
        """(token text, public record); the text is never stored."""
        if not isinstance(label, str) or len(label) > 100:
            raise BadUserError("a token label must be text of at most 100 characters")
        token_id = secrets.token_hex(6)
        token = f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        record = {
            "id": token_id,
            "user": user,
            "label": label,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "sha256": digest(token),
        }
        self.records.put("tokens", token_id, record)
        return token, public(record)

    def resolve(self, token):
        """The user name a token belongs to, or None."""
        if not isinstance(token, str) or not token.startswith(PREFIX) or len(token) > 200:
            return None
        token_id = token[len(PREFIX) :].split("_", 1)[0]
        record = self.records.get("tokens", token_id)
        if record is None or not hmac.compare_digest(record["sha256"], digest(token)):
            return None
        return record["user"]

    def list(self, user=None):
        items = [
            public(r)
            for r in self.records.all("tokens").values()
            if user is None or r["user"] == user
        ]
        return sorted(items, key=lambda r: r["created"])

    def get(self, token_id):
        record = self.records.get("tokens", token_id) if isinstance(token_id, str) else None
        if record is None:
            raise UnknownUserError(f"no token {str(token_id)[:20]!r}")
        return record

    def revoke(self, token_id):
        if not self.records.delete("tokens", token_id):
            raise UnknownUserError(f"no token {str(token_id)[:20]!r}")

    def revoke_user(self, user):
        for record in list(self.records.all("tokens").values()):
            if record["user"] == user:
                self.records.delete("tokens", record["id"])


def public(record):
    return {k: v for k, v in record.items() if k != "sha256"}
