"""The distributed deployment status page: managers, Spark master, topologies, workers,
registry endpoints and per-plan flows; refreshed in the browser from GET /api/v1/status."""

from flask import render_template

from manager.web.console import data


def status_page():
    return render_template("console/status.html", status=data.deployment_status(), page="status")


def register(bp):
    bp.add_url_rule("/status", "status", status_page)
