"""REST: POST /api/v1/tenants/<t>/plans/<n>/backtest runs `cep backtest` on a stored plan over
datasets under the tenant's file roots; GET .../backtest/<id> gives state and summary."""

import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.manager.test_manager_api import client, manager  # noqa: F401 - shared fixtures

PLAN = """@Plan:name('Spikes')
define stream S (sym string, price double);
partition with (sym of S) begin
  from S#window.length(2) select sym, avg(price) as a insert into Avg;
end;
"""
URL = "/api/v1/tenants/-1234/plans/Spikes/backtest"


@pytest.fixture
def stored(client, tmp_path):  # noqa: F811
    resp = client.post("/api/v1/tenants/-1234/plans", data=PLAN, content_type="text/plain")
    assert resp.status_code == 201, resp.get_json()
    files = tmp_path / "tenants" / "-1234" / "files"
    files.mkdir(parents=True, exist_ok=True)
    return files


def test_paths_outside_the_tenants_roots_are_refused_without_server_paths(
    client,
    stored,  # noqa: F811
    tmp_path,
):
    resp = client.post(URL, json={"inputs": {"S": "/etc/passwd"}, "output": "out"})
    assert resp.status_code == 400
    assert "outside the allowed file roots" in resp.get_json()["message"]
    assert str(tmp_path) not in resp.get_data(as_text=True)
    resp = client.post(URL, json={"inputs": {"S": "../x.parquet"}, "output": "out"})
    assert resp.status_code == 400 and "'..'" in resp.get_json()["message"]
    assert client.post(URL, json={"inputs": {}, "output": "o"}).status_code == 400
    assert (
        client.post(
            URL, json={"inputs": {"S": "a.parquet"}, "output": "o", "format": "xls"}
        ).status_code
        == 400
    )


def test_unknown_plan_and_unknown_job_are_404(client, stored):  # noqa: F811
    assert (
        client.post(
            "/api/v1/tenants/-1234/plans/Nope/backtest",
            json={"inputs": {"S": "a.parquet"}, "output": "o"},
        ).status_code
        == 404
    )
    assert client.get(URL + "/0123456789abcdef").status_code == 404


def wait_done(client, job_id, timeout=1200):  # noqa: F811
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"{URL}/{job_id}").get_json()
        if job["state"] != "running":
            return job
        time.sleep(1)
    raise AssertionError(f"backtest {job_id} still running after {timeout} s")


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_backtest_runs_over_files_under_the_roots_and_reports_summary(
    client,
    stored,  # noqa: F811
    tmp_path,
):
    pq.write_table(
        pa.table(
            {"timestamp": [3, 1, 2, 4], "sym": ["a", "a", "b", "a"], "price": [3.0, 1.0, 2.0, 5.0]}
        ),
        str(stored / "s.parquet"),
    )
    pq.write_table(
        pa.table({"timestamp": [1], "sym": ["a"], "price": ["x"]}), str(stored / "bad.parquet")
    )
    resp = client.post(URL, json={"inputs": {"S": "s.parquet"}, "output": "bt/out"})
    assert resp.status_code == 202
    bad = client.post(URL, json={"inputs": {"S": "bad.parquet"}, "output": "bt/bad"})
    job = wait_done(client, resp.get_json()["id"])
    assert job["state"] == "done", job
    summary = job["summary"]
    assert summary["events_in"] == 4 and summary["events_out"] == {"Avg": 4}
    assert summary["mode"] == "keyed" and "output" not in summary
    assert summary["plan"] == "Spikes" and (summary["first_ts"], summary["last_ts"]) == (1, 4)
    assert (stored / "bt" / "out" / "Avg").is_dir()
    failed = wait_done(client, bad.get_json()["id"])
    assert failed["state"] == "failed"
    assert failed["error"].startswith("bad.parquet: column 'price' has type string"), failed
    assert str(tmp_path) not in str(failed)
    assert not (stored / "bt" / "bad").exists()
