"""The plan page's Backtest block (issue 15) in a real headless Chromium: fill in a dataset
path under the tenant's file roots, run, see the summary and the chart of output counts over
time. The run is real: the REST API starts `cep backtest` (its own local Spark JVM)."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from selenium.webdriver.common.by import By

from tests.console.conftest import TENANT, sign_in
from tests.console.console_helpers import css, one, rest, text_of, wait_until

PLAN = """@Plan:name('BtConsole')
define stream Ticks (sym string, price double);
partition with (sym of Ticks) begin
  from Ticks[price > 10.0] select sym, price insert into High;
  from Ticks#window.length(2) select sym, avg(price) as a insert into Avg;
end;
"""


@pytest.fixture(scope="module")
def dataset(fake_console):
    roots = fake_console.manager.plans.policy.file_roots_for(TENANT)
    assert roots, "the manager has no file roots for the tenant"
    os.makedirs(roots[0], exist_ok=True)
    n = 600
    pq.write_table(
        pa.table(
            {
                "timestamp": pa.array([1_700_000_000_000 + 1000 * i for i in range(n)], pa.int64()),
                "sym": [f"S{i % 3}" for i in range(n)],
                "price": [float(5 + (i % 10)) for i in range(n)],
            }
        ),
        os.path.join(roots[0], "ticks.parquet"),
    )
    status, body = rest(fake_console.url, f"/api/v1/tenants/{TENANT}/plans", PLAN)
    assert status == 201, body
    return n


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_backtest_from_the_plan_page_shows_summary_and_chart(fake_console, dataset, browser, shot):
    sign_in(browser, fake_console)
    browser.get(f"{fake_console.url}/console/tenants/{TENANT}/plans/BtConsole")
    field = one(browser, "#backtest-form input.backtest-input[data-stream='Ticks']")
    field.send_keys("../escape.parquet")  # refused by the API: the block says why
    one(browser, "#backtest-run").click()
    wait_until(
        lambda: "Not started" in text_of(browser, "#backtest-state"), 20, "a refused path shown"
    )
    assert "'..'" in text_of(browser, "#backtest-state")
    field.clear()
    field.send_keys("ticks.parquet")
    out = browser.find_element(By.ID, "backtest-output")
    out.clear()
    out.send_keys("bt-out")
    shot("form")
    one(browser, "#backtest-run").click()
    wait_until(
        lambda: text_of(browser, "#backtest-state").startswith(("Done", "Failed")),
        240,
        "the backtest to finish",
        interval=0.5,
        detail=lambda: text_of(browser, "#backtest-state"),
    )
    shot("done")
    assert text_of(browser, "#backtest-state").startswith("Done"), text_of(
        browser, "#backtest-state"
    )
    assert text_of(browser, "#bt-events-in") == f"{dataset:,}"
    assert text_of(browser, "#bt-out-Avg") == f"{dataset:,}"
    high = sum(1 for i in range(dataset) if 5 + (i % 10) > 10)
    assert text_of(browser, "#bt-out-High") == f"{high:,}"
    assert text_of(browser, "#bt-mode").startswith("keyed")
    series = {
        e.get_attribute("data-stream"): e.get_attribute("points")
        for e in css(browser, "#backtest-chart polyline.bt-series")
    }
    assert set(series) == {"Avg", "High"}
    assert all(len(p.split()) >= 2 for p in series.values()), series
    assert browser.find_element(By.ID, "backtest-chart").is_displayed()
    roots = fake_console.manager.plans.policy.file_roots_for(TENANT)
    assert os.path.exists(os.path.join(roots[0], "bt-out", "_summary.json"))
