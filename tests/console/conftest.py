"""Console test fixtures.

- `browser`: one headless Chromium for the session: Debian's `chromium` driven by Selenium
  through Debian's `chromedriver` (bin/test.sh installs both with apt). Missing: skipped with
  the reason locally, a failure under CI=true. Window 1400x900. Host names other than the
  loopback do not resolve, so a page that fetches an asset from the internet breaks visibly.
- `shot(name)`: saves a screenshot (and the page's HTML) of the current step under
  test-artifacts/console/<test name>/NN-<name>.png (gitignored; CI keeps the folder).
- `fake_console`: the real manager (store, compiler, registry, REST API and console) with a
  fake Spark launcher, served over HTTP on a free port: pages and escaping without Spark.
- `system`: the real thing: a manager with the embedded Spark cluster (the worker end-to-end
  test's `manager` fixture), its REST API and console on a free port, and one real CEP worker
  whose sinks write files into a temp dir.
- With authentication on (issue 10), both carry an admin API token that `rest()` and their
  Flask test client send, and `sign_in(browser, target)` logs the browser in to the console.
"""

import os
import re
import shutil
import time
import types
from pathlib import Path

import pytest

from tests.conftest import require_binary

# the real system: reuse the worker end-to-end fixture and helper rather than copying them
from tests.worker.test_worker_e2e import manager as spark_manager  # noqa: F401 (a fixture)
from tests.worker.test_worker_e2e import start_worker

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "console"
WINDOW = (1400, 900)
TENANT = -1234
os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must never download a driver


def chromium_paths():
    """(browser, driver) paths of Debian's chromium and chromium-driver."""
    why = "console tests drive a real headless Chromium"
    return require_binary("chromium", why), require_binary("chromedriver", why)


def chrome_options(binary):
    from selenium import webdriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--disable-extensions",
        "--no-first-run",
        "--disable-background-networking",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return opts


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (Selenium WebDriver) shared by the session's console tests."""
    binary, driver_path = chromium_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    driver = webdriver.Chrome(service=Service(driver_path), options=chrome_options(binary))
    driver.set_window_size(*WINDOW)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def js_errors(driver):
    """The SEVERE browser-console messages since the last call (JS errors, failed loads), but
    for Chromium's own request of /favicon.ico, and requests Chromium itself aborted with
    ERR_NETWORK_CHANGED because another test on this machine added or removed a network
    interface (the multi-machine tests' veth pairs and bridges): not the console's error."""
    return [
        e["message"]
        for e in driver.get_log("browser")
        if e.get("level") == "SEVERE"
        and "/favicon.ico " not in e["message"]
        and "net::ERR_NETWORK_CHANGED" not in e["message"]
    ]


def safe_name(text):
    return re.sub(r"[^\w.-]+", "_", text)


@pytest.fixture
def shot(browser, request):
    """shot(name): screenshot + HTML of the browser's current page, numbered per test. Also
    starts the test with the browser's console log of earlier tests drained."""
    browser.get_log("browser")
    folder = ARTIFACTS / safe_name(request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    count = [0]

    def take(name):
        count[0] += 1
        stem = folder / f"{count[0]:02d}-{safe_name(name)}"
        browser.save_screenshot(str(stem.with_suffix(".png")))
        stem.with_suffix(".html").write_text(browser.page_source)
        return stem.with_suffix(".png")

    return take


def api_token(manager, url):
    """An admin API token of `manager` (None without authentication), sent by rest() to url."""
    from tests.console.console_helpers import TOKENS

    service = getattr(manager, "auth", None)
    if service is None or not service.enabled:
        return None
    from tests.auth_helpers import admin_token

    TOKENS[url] = admin_token(manager)
    return TOKENS[url]


_SIGNED_IN = {}  # browser session id -> the console URL its session cookie belongs to


def sign_in(browser, target):
    """Log the browser in to the console of `target` (fake_console or system) as the admin,
    through the login page; a no-op without authentication or when already signed in there.
    (Cookies are per host, not per port: signing in to another manager replaces the session.)"""
    service = getattr(target.manager, "auth", None)
    if service is None or not service.enabled or _SIGNED_IN.get(browser.session_id) == target.url:
        return
    from selenium.webdriver.common.by import By
    from tests.auth_helpers import ADMIN_PASSWORD

    browser.delete_all_cookies()
    browser.get(target.url + "/console/login")
    browser.find_element(By.CSS_SELECTOR, "input[name=user]").send_keys("admin")
    browser.find_element(By.CSS_SELECTOR, "input[name=password]").send_keys(ADMIN_PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    deadline = time.monotonic() + 10
    while "/console/login" in browser.current_url and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "/console/login" not in browser.current_url, "console login failed"
    _SIGNED_IN[browser.session_id] = target.url


def _serve(manager):
    """The manager's Flask app (REST API + console) over HTTP on a free loopback port."""
    from manager.web import create_app
    from receivers.http_receiver import HttpServer

    app = create_app({"MANAGER": manager})
    return app, HttpServer(app, "127.0.0.1", 0).start()


@pytest.fixture(scope="module")
def fake_console(tmp_path_factory):
    """A real manager with a fake launcher (topologies go ACTIVE at once, no Spark), its app
    over HTTP (`.url`) and a Flask test client (`.client`)."""
    from manager.server import Manager
    from manager.settings import load_manager_settings
    from tests.manager.manager_fakes import FakeLauncher

    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path_factory.mktemp("console-fake")),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    app, server = _serve(m)
    app.config["TESTING"] = True
    client, token = app.test_client(), api_token(m, server.url)
    if token:
        client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    try:
        yield types.SimpleNamespace(manager=m, app=app, client=client, url=server.url, token=token)
    finally:
        server.stop()
        m.stop()


@pytest.fixture(scope="module")
def system(spark_manager, tmp_path_factory):  # noqa: F811 (the imported fixture)
    """The real system: manager + embedded Spark (REST API and console at `.url`), one real
    CEP worker `w1` whose file sinks write under `.sink_dir`."""
    sink_dir = tmp_path_factory.mktemp("console-sinks")
    token = api_token(spark_manager, spark_manager.rest_url)
    worker = start_worker(spark_manager, "w1", str(sink_dir))
    try:
        yield types.SimpleNamespace(
            manager=spark_manager,
            url=spark_manager.rest_url,
            worker=worker,
            sink_dir=sink_dir,
            tenant=TENANT,
            token=token,
        )
    finally:
        worker.stop()


def sink_rows(sink_dir, plan, stream, tenant=TENANT):
    """The rows a worker's file sink wrote for one stream: [{"stream", "timestamp", "data"}]."""
    import json

    path = Path(sink_dir) / str(tenant) / plan / f"{stream}.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
