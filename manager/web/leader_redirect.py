"""Writes go to the leader of a manager group.

On a follower, a request that changes plans (add, edit, remove) is answered `307 Temporary
Redirect` to the same path on the leader's URL (a 307 keeps the method and the body; the CLI
follows it), with a JSON body `{"error": "NotLeader", "leader": URL}`. With no leader known
(between a leader's death and a follower's take-over) the answer is `503` with
`Retry-After: 1`. Reads are served by every manager from the shared store."""

from flask import current_app, jsonify, request

WRITES = {"api_plans.add_plan", "api_plans.edit_plan", "api_plans.remove_plan"}


def register(app):
    app.before_request(send_writes_to_leader)


def send_writes_to_leader():
    if request.endpoint not in WRITES:
        return None
    manager = current_app.config["MANAGER"]
    if manager.is_leader():
        return None
    leader = manager.leader_url()
    if not leader or leader == getattr(manager.group, "url", None):
        resp = jsonify(
            {
                "error": "NoLeader",
                "retry": True,
                "message": "no manager of the group holds the leader lease right now; "
                "retry in a second",
            }
        )
        resp.status_code = 503
        resp.headers["Retry-After"] = "1"
        return resp
    resp = jsonify(
        {
            "error": "NotLeader",
            "leader": leader,
            "message": f"this manager follows; writes go to the leader at {leader}",
        }
    )
    resp.status_code = 307
    resp.headers["Location"] = leader.rstrip("/") + request.full_path.rstrip("?")
    return resp
