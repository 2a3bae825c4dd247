"""Console tools: "Try it" (a plan over sample events, in-process) and the event simulator of
a deployed plan."""

from flask import render_template

from manager.store.base import parse_tenant
from manager.web.console import data
from manager.web.console.plan_views import NEW_PLAN

TRY_EVENTS = """{"stream": "InStream", "timestamp": 1000, "data": ["IBM", 120.5, 100]}
{"stream": "InStream", "timestamp": 2000, "data": ["WSO2", 55.0, 10]}
{"stream": "InStream", "delay": 500, "data": ["ORCL", 101.0, 20]}
"""


def try_page():
    return render_template(
        "console/try.html", plan_text=NEW_PLAN, events_text=TRY_EVENTS, page="try"
    )


def simulate_page(tenant, name):
    tenant = parse_tenant(tenant)
    plan = data.plan_detail(tenant, name)
    return render_template(
        "console/simulate.html",
        tenant=tenant,
        plan=plan,
        streams=data.imported_streams(tenant, name),
        page="plans",
    )


def register(bp):
    bp.add_url_rule("/try", "try_it", try_page)
    bp.add_url_rule("/tenants/<tenant>/plans/<name>/simulate", "simulate", simulate_page)
