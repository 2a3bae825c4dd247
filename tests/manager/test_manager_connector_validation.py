"""The manager refuses unknown @source/@sink/@map types and options the way the compiler
positions them: plan add answers 400 with the line and column, and POST /api/v1/validate (the
console editor's check) gives the same error and stores nothing."""

from tests.manager.test_manager_api import client, manager  # noqa: F401

PIGEON = """@Plan:name('Pigeon')
@source(type='carrierpigeon', @map(type='yaml'))
define stream S (a int);
from S select a insert into O;
"""
BAD_MAP = """@Plan:name('BadMap')
define stream S (a int);
@sink(type='log',
      @map(type='yaml'))
define stream O (a int);
from S select a insert into O;
"""


def test_plan_add_and_validate_refuse_an_unknown_source_type_with_its_position(client):
    checked = client.post("/api/v1/validate", data=PIGEON, content_type="text/plain").get_json()
    added = client.post("/api/v1/tenants/-1234/plans", data=PIGEON, content_type="text/plain")
    assert checked["valid"] is False and added.status_code == 400
    err = checked["errors"][0]
    assert (err["error"], err["line"], err["column"]) == ("AnnotationError", 2, 1)
    assert "carrierpigeon" in err["message"] and "http" in err["message"]
    assert added.get_json()["errors"][0]["message"] == err["message"]
    assert client.get("/api/v1/tenants/-1234/plans").get_json()["plans"] == []


def test_validate_positions_an_unknown_map_type_on_its_own_line(client):
    err = client.post("/api/v1/validate", data=BAD_MAP, content_type="text/plain").get_json()[
        "errors"
    ][0]
    assert (err["line"], err["column"]) == (4, 7)
    assert "yaml" in err["message"] and "passThrough" in err["message"]
