"""Issue 10 in a real browser: the console's login page, a viewer's tenant picker limited to its
own tenant, another tenant's page a 404, the session cookie HttpOnly (invisible to JS), the
console's delete refused for a viewer (403, the plan stays) and logout back to the login page."""

import pytest
from selenium.webdriver.support.ui import Select

from tests.console import conftest
from tests.console.console_helpers import one, rest, wait_until

pytestmark = pytest.mark.slow  # a real headless Chromium

PLAN = (
    "@Plan:name('ViewMe')\n@Import('InStream:1.0.0')\ndefine stream InStream (a int);\n"
    "@Export('OutStream:1.0.0')\ndefine stream OutStream (a int);\n"
    "from InStream select a insert into OutStream;\n"
)


def submit_login(browser, url, user, password):
    browser.delete_all_cookies()
    conftest._SIGNED_IN.pop(browser.session_id, None)  # the shared sign-in is gone
    browser.get(url + "/console/tenants/5/plans")
    wait_until(lambda: "/console/login" in browser.current_url, 10, "redirect to login")
    one(browser, "input[name=user]").send_keys(user)
    one(browser, "input[name=password]").send_keys(password)
    one(browser, "#login-submit").click()


def test_viewer_login_picker_csrf_and_logout(fake_console, browser, shot):
    auth = fake_console.manager.auth
    if not auth.directory.tenant_exists(5):
        auth.directory.add_tenant(5, "five")
        auth.directory.add_user("v5", "viewer password", 5, "viewer")
    assert rest(fake_console.url, "/api/v1/tenants/5/plans", PLAN)[0] == 201
    submit_login(browser, fake_console.url, "v5", "wrong password!")
    assert "Wrong user name or password" in one(browser, "#login-error").text
    assert "/console/login" in browser.current_url
    submit_login(browser, fake_console.url, "v5", "viewer password")
    wait_until(lambda: "/console/login" not in browser.current_url, 10, "logged in")
    assert browser.current_url.endswith("/console/tenants/5/plans")
    shot("viewer plans")
    options = [o.get_attribute("value") for o in Select(one(browser, "#tenant")).options]
    assert options == ["5"]  # only its own tenant, no "Other tenant..."
    assert one(browser, "#whoami").text == "v5"
    assert browser.execute_script("return document.cookie").find("cep_session") < 0
    # the console's own fetch carries the CSRF token, and the viewer's delete is refused
    answer = browser.execute_async_script(
        "var done = arguments[0]; CEP.request('DELETE', '/api/v1/tenants/5/plans/ViewMe')"
        ".then(function (r) { done([r.status, r.body.error]); });"
    )
    assert answer == [403, "ForbiddenError"]  # the CSRF check passed; the role refused
    bare = browser.execute_async_script(  # the same call without the header: CSRF refusal
        "var done = arguments[0]; fetch('/api/v1/tenants/5/plans/ViewMe', {method: 'DELETE'})"
        ".then(function (r) { return r.json(); }).then(function (b) { done(b.error); });"
    )
    assert bare == "CsrfError"
    assert rest(fake_console.url, "/api/v1/tenants/5/plans/ViewMe")[0] == 200
    browser.get(fake_console.url + "/console/tenants/-1234/plans")
    assert "404" in one(browser, "#error").get_attribute("data-status")
    one(browser, "#logout").click()
    wait_until(lambda: "/console/login" in browser.current_url, 10, "back to login")
    browser.get(fake_console.url + "/console/status")
    assert "/console/login" in browser.current_url
    browser.delete_all_cookies()
    conftest._SIGNED_IN.pop(browser.session_id, None)
