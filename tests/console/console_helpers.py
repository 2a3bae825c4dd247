"""Helpers of the console browser tests: waits that fail with what was last seen, the
CodeMirror editor of the plan pages, REST calls, and `cep run` in-process (the oracle of
try-it)."""

import io
import json
import time
import types
import urllib.error
import urllib.request

import pytest
from selenium.webdriver.common.by import By

TENANT = -1234
TOKENS = {}  # base URL -> API token that rest() sends (managers with authentication on)


def wait_until(fn, timeout=20.0, what="condition", interval=0.1, detail=None):
    """Call fn until it returns something truthy (exceptions count as not yet); fail with the
    last value or error (and what `detail()` says) otherwise."""
    deadline, last = time.monotonic() + timeout, None
    while True:
        try:
            value = fn()
            if value:
                return value
            last = value
        except Exception as exc:  # an element not there yet, a stale element
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() > deadline:
            more = f"; {detail()}" if detail else ""
            pytest.fail(f"{what}: not met within {timeout} s (last: {last!r}){more}")
        time.sleep(interval)


def css(driver, selector):
    return driver.find_elements(By.CSS_SELECTOR, selector)


def one(driver, selector, timeout=10.0):
    """The first element matching `selector`, waiting for it to appear."""
    return wait_until(
        lambda: (css(driver, selector) or [None])[0],
        timeout,
        f"element {selector!r} on {driver.current_url}",
    )


def text_of(driver, selector):
    found = css(driver, selector)
    return found[0].text if found else ""


def set_editor(driver, text):
    """Replace the CodeMirror 5 editor's text (as a user's edit: change events fire)."""
    one(driver, "#editor .CodeMirror")
    driver.execute_script(
        "document.querySelector('#editor .CodeMirror').CodeMirror.setValue(arguments[0]);", text
    )


def error_marks(driver):
    """The editor's error marks: [{"from": [line, column], "to": [line, column], "text"}] with
    1-based lines and columns, as CodeMirror places them."""
    return driver.execute_script("""
        const cm = document.querySelector('#editor .CodeMirror').CodeMirror;
        return cm.getAllMarks().filter(m => (m.className || '').includes('cm-siddhi-error'))
          .map(m => { const r = m.find(); if (!r) return null;
            return {from: [r.from.line + 1, r.from.ch + 1], to: [r.to.line + 1, r.to.ch + 1],
                    text: cm.getRange(r.from, r.to)}; }).filter(x => x);""")


def listed_errors(driver):
    """The messages of ul#validation-errors: [{"line", "column", "text"}]."""
    return [
        {
            "line": li.get_attribute("data-line"),
            "column": li.get_attribute("data-column"),
            "text": li.text,
        }
        for li in css(driver, "ul#validation-errors > li")
    ]


def set_field(driver, selector, value):
    """Set a textarea's or input's value as typing would (input and change events fire)."""
    el = one(driver, selector)
    driver.execute_script(
        """
        const el = arguments[0]; el.value = arguments[1];
        el.dispatchEvent(new Event('input', {bubbles: true}));
        el.dispatchEvent(new Event('change', {bubbles: true}));""",
        el,
        value,
    )
    return el


def rest(base, path, body=None, method=None):
    """(status, JSON) of a REST call; a str body goes as text/plain."""
    data = (
        body.encode()
        if isinstance(body, str)
        else (json.dumps(body).encode() if body is not None else None)
    )
    headers = {"Content-Type": "text/plain" if isinstance(body, str) else "application/json"}
    if TOKENS.get(base):
        headers["Authorization"] = f"Bearer {TOKENS[base]}"
    req = urllib.request.Request(
        base + path,
        data=data,
        method=method or ("POST" if data is not None else "GET"),
        headers=headers,
    )
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            raw = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        raw, status = exc.read(), exc.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def cep_run(plan_path, events_path):
    """What `cep run --playback` prints for the plan and events, run in-process through the
    CLI's own entry point: [{"stream", "timestamp", "data"}]."""
    from cep.cli.run import main

    out, err = io.StringIO(), io.StringIO()
    code = main(
        types.SimpleNamespace(
            plan=str(plan_path), events=str(events_path), playback=True, on_error="skip"
        ),
        out,
        err,
    )
    assert code == 0, err.getvalue()
    rows = [json.loads(x) for x in out.getvalue().splitlines() if x.strip()]
    return [{k: r[k] for k in ("stream", "timestamp", "data")} for r in rows]
