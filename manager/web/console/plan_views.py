"""Console pages of execution plans: the plans list, add/edit editor and plan details."""

from flask import make_response, redirect, render_template, url_for

from manager.store.base import parse_tenant
from manager.web.console import data
from manager.web.console.backtest_view import input_streams
from manager.web.console.nav import selected_tenant
from manager.web.console.xml_highlight import highlight_xml

NEW_PLAN = """@Plan:name('MyPlan')
@Plan:description('What this plan does')

@Import('InStream:1.0.0')
define stream InStream (symbol string, price double, volume long);

@Export('OutStream:1.0.0')
define stream OutStream (symbol string, price double);

from InStream[price > 100.0]
select symbol, price
insert into OutStream;
"""


def index():
    return redirect(url_for("console.plans", tenant=selected_tenant()))


def plans(tenant):
    tenant = parse_tenant(tenant)
    resp = make_response(
        render_template("console/plans.html", rows=data.plan_rows(tenant), page="plans")
    )
    resp.set_cookie("tenant", str(tenant), samesite="Lax", httponly=True)
    return resp


def new_plan(tenant):
    return render_template(
        "console/editor.html", tenant=parse_tenant(tenant), plan=None, text=NEW_PLAN, page="plans"
    )


def edit_plan(tenant, name):
    tenant = parse_tenant(tenant)
    plan = data.plan_detail(tenant, name)
    return render_template(
        "console/editor.html", tenant=tenant, plan=plan, text=plan["text"], page="plans"
    )


def plan_details(tenant, name):
    tenant = parse_tenant(tenant)
    plan = data.plan_detail(tenant, name)
    return render_template(
        "console/plan.html",
        tenant=tenant,
        plan=plan,
        xml_html=highlight_xml(plan["xml"]),
        page="plans",
        backtest_streams=input_streams(plan["text"]),
    )


def register(bp):
    bp.add_url_rule("/", "index", index)
    bp.add_url_rule("/tenants/<tenant>/plans", "plans", plans)
    bp.add_url_rule("/tenants/<tenant>/plans/new", "new_plan", new_plan)
    bp.add_url_rule("/tenants/<tenant>/plans/<name>", "plan", plan_details)
    bp.add_url_rule("/tenants/<tenant>/plans/<name>/edit", "edit_plan", edit_plan)
