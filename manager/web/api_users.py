"""REST API /api/v1 of users, tenants and API tokens.

`POST /login` trades a user's password for a new API token (shown once); `GET /whoami`;
`GET|POST /users`, `DELETE /users/<user>`, `GET|POST /tenants` (super admin);
`PUT /users/<user>/password` (the user or a super admin);
`GET|POST /tokens`, `DELETE /tokens/<token_id>` (a user's own tokens; a super admin's any)."""

from flask import Blueprint, current_app, g, jsonify, request

from manager.auth.exceptions import (
    BadUserError,
    ForbiddenError,
    NotAuthenticatedError,
    UnknownUserError,
)
from manager.store.base import SUPER_TENANT

bp = Blueprint("api_users", __name__, url_prefix="/api/v1")


def auth():
    return current_app.config["MANAGER"].auth


def body():
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        raise BadUserError("the body must be a JSON object")
    return data


def _self_or_super(user):
    if g.principal.name != user and not g.principal.is_super:
        raise ForbiddenError("only the user or a super-admin may do this")


@bp.post("/login")
def login():
    data = body()
    record = auth().login(data.get("user"), data.get("password"), request.remote_addr)
    if record is None:
        raise NotAuthenticatedError("wrong user name or password")
    label = data.get("label", "login")
    token, meta = auth().create_token(record["name"], label if isinstance(label, str) else "")
    auth().audit.record(
        "token.create",
        user=record["name"],
        tenant=record["tenant"],
        target=meta["id"],
        remote=request.remote_addr,
    )
    return jsonify(
        {
            "token": token,
            "id": meta["id"],
            "user": record["name"],
            "tenant": record["tenant"],
            "role": record["role"],
        }
    ), 201


@bp.get("/whoami")
def whoami():
    return jsonify(g.principal.to_dict())


@bp.get("/users")
def list_users():
    return jsonify({"users": auth().directory.users()})


@bp.post("/users")
def add_user():
    data = body()
    user = auth().directory.add_user(
        data.get("name"),
        data.get("password"),
        data.get("tenant", SUPER_TENANT),
        data.get("role", "viewer"),
    )
    return jsonify(user), 201


@bp.delete("/users/<user>")
def remove_user(user):
    if user == g.principal.name:
        raise BadUserError("a user cannot remove itself")
    auth().directory.remove_user(user)
    auth().tokens.revoke_user(user)
    return jsonify({"removed": user})


@bp.put("/users/<user>/password")
def set_password(user):
    """A user changes its own password only with the current one (`{"current": ...}`: a
    stolen token alone cannot take the account over); a super admin may set anyone's. The
    user's console sessions end and its API tokens are revoked, except the token of this
    request when it is the user's own."""
    _self_or_super(user)
    data = body()
    if (
        not g.principal.is_super
        and auth().directory.authenticate(user, data.get("current")) is None
    ):
        auth().audit.record(
            "password.change",
            "refused",
            user=g.principal.name,
            target=user,
            remote=request.remote_addr,
        )
        raise ForbiddenError(
            'the current password is missing or wrong (send {"current": ..., "password": ...})'
        )
    auth().directory.set_password(user, data.get("password"))
    auth().end_sessions(user)  # console sessions with the old password end
    keep = _request_token_id() if g.principal.name == user else None
    revoked = 0
    for record in auth().tokens.list(user):
        if record["id"] != keep:
            auth().tokens.revoke(record["id"])
            revoked += 1
    auth().audit.record(
        "password.change", user=g.principal.name, target=user, remote=request.remote_addr
    )
    return jsonify({"user": user, "password": "changed", "tokens_revoked": revoked})


def _request_token_id():
    """The id of the API token this request carries (Authorization: Bearer), or None."""
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer cep_"):
        return None
    return header[len("Bearer cep_") :].split("_", 1)[0] or None


@bp.get("/tenants")
def list_tenants():
    return jsonify({"tenants": auth().directory.tenants()})


@bp.post("/tenants")
def add_tenant():
    data = body()
    return jsonify(auth().directory.add_tenant(data.get("id"), data.get("name", ""))), 201


@bp.get("/tokens")
def list_tokens():
    user = request.args.get("user", g.principal.name)
    _self_or_super(user)
    return jsonify({"tokens": auth().tokens.list(user)})


@bp.post("/tokens")
def create_token():
    data = request.get_json(silent=True) or {}
    if not isinstance(data, dict):
        raise BadUserError("the body must be a JSON object")
    user = data.get("user", g.principal.name)
    _self_or_super(user)
    token, meta = auth().create_token(user, data.get("label", ""))
    return jsonify({"token": token, **meta}), 201


@bp.delete("/tokens/<token_id>")
def revoke_token(token_id):
    record = auth().tokens.get(token_id)
    if g.principal.name != record["user"] and not g.principal.is_super:
        # another user's token answers as an unknown one: ids do not leak existence
        raise UnknownUserError(f"no token {str(token_id)[:20]!r}")
    auth().tokens.revoke(token_id)
    return jsonify({"revoked": token_id})
