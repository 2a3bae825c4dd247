"""`cep import` of a CEP 4.0 RDBMS publisher: its datasource, table, execution mode and update
keys become an `@sink(type='rdbms')` that plan validation accepts; a custom column mapping
(which the sink cannot do) is an error line naming the file and the element."""

import shutil
from pathlib import Path

import cep
from cep.importer import import_deployment

DATA = Path(__file__).parent / "data" / "acme_deployment"

PUBLISHER = """<?xml version="1.0" encoding="UTF-8"?>
<eventPublisher name="AlertRows" statistics="disable" trace="disable"
                xmlns="http://wso2.org/carbon/eventpublisher">
    <from streamName="org.acme.Alert" version="1.0.0"/>
    <mapping customMapping="{custom}" type="map">{properties}</mapping>
    <to eventAdapterType="rdbms">
        <property name="datasource.name">WSO2_ACME_DB</property>
        <property name="table.name">alert_rows</property>
        <property name="execution.mode">update</property>
        <property name="update.keys">symbol</property>
    </to>
</eventPublisher>
"""


def _deployment(tmp_path, custom):
    dep = tmp_path / "dep"
    shutil.copytree(DATA, dep)
    props = '<property><from name="symbol"/><to name="ticker"/></property>' if custom else ""
    (dep / "eventpublishers" / "AlertRows.xml").write_text(
        PUBLISHER.format(custom="enable" if custom else "disable", properties=props)
    )
    return dep


def test_an_rdbms_publisher_becomes_an_upsert_sink(tmp_path):
    result = import_deployment(_deployment(tmp_path, custom=False))
    plan = cep.compile(result.plans[0].text)
    (sink,) = [
        a
        for a in plan.stream("alerts").annotations
        if a.matches("sink") and a.get("type") == "rdbms"
    ]
    assert (
        sink.get("datasource"),
        sink.get("table.name"),
        sink.get("mode"),
        sink.get("on.key"),
    ) == ("WSO2_ACME_DB", "alert_rows", "upsert", "symbol")
    assert not any("AlertRows" in str(p) for p in result.errors)


def test_an_rdbms_publisher_with_custom_columns_is_an_error_line(tmp_path):
    result = import_deployment(_deployment(tmp_path, custom=True))
    lines = [str(p) for p in result.errors if "AlertRows" in str(p)]
    assert len(lines) == 1 and "custom column names" in lines[0], lines
    assert "eventPublisher 'AlertRows' <mapping customMapping='enable'>" in lines[0]
