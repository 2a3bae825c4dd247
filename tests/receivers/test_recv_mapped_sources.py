"""Sources with a @map: ZeroMQ payload frames, file lines and HTTP bodies on the source's own
port are decoded by the map; unreadable messages are counted and shown by describe(), and the
messages around them go on."""

import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from cep.mapping import MapSpec
from receivers.exceptions import SourceConfigError
from receivers.sources import build_source
from receivers.zmq_receiver import ZmqEventClient


def wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not cond():
        time.sleep(0.01)
    return cond()


CUSTOM_JSON = MapSpec(
    "json",
    {},
    (("symbol", "$.s"), ("price", "$.p"), ("volume", "$.v"), ("qty", "$.q"), ("ok", "$.ok")),
).to_dict()


def test_zmq_source_decodes_payload_frames_with_its_map(router, recorder, key):
    src = build_source(
        {"type": "zmq", "url": "tcp://127.0.0.1:0"}, router, key, mapping=CUSTOM_JSON
    ).start()
    client = ZmqEventClient(src.describe()["url"])
    try:
        client.send_raw([b'{"s": "A", "p": 1.5, "v": 1, "q": 2, "ok": true}'])
        client.send_raw([b'{"s": "B"'])
        client.send_raw([b'[{"s": "C", "p": 2, "v": 3, "q": 4, "ok": false}]'])
        assert wait_for(lambda: len(recorder.events) == 2)
        assert [r for _, r in recorder.events] == [("A", 1.5, 1, 2, True), ("C", 2.0, 3, 4, False)]
        assert wait_for(lambda: src.describe()["map"]["errors"] == 1)
    finally:
        client.close()
        src.stop()


def test_file_source_decodes_each_line_with_its_map(tmp_path, router, recorder, key):
    path = tmp_path / "in.csv"
    path.write_text("A,1.5,1,2,true\nB,oops,1,2,true\nC,3,4,5,false\n")
    src = build_source(
        {"type": "file", "path": str(path)}, router, key, mapping=MapSpec("csv").to_dict()
    ).start()
    try:
        assert wait_for(lambda: len(recorder.events) == 2)
        assert [r for _, r in recorder.events] == [("A", 1.5, 1, 2, True), ("C", 3.0, 4, 5, False)]
        assert src.describe()["map"]["errors"] == 1
    finally:
        src.stop()


def test_http_source_port_decodes_the_body_with_its_map(router, recorder, key):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    src = build_source(
        {"type": "http", "port": str(port), "host": "127.0.0.1"},
        router,
        key,
        mapping=MapSpec("text").to_dict(),
    ).start()
    try:

        def post(body):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/", data=body, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=5) as resp:
                    return resp.status, json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        status, reply = post(b"symbol:A,\nprice:1.5,\nvolume:1,\nqty:2,\nok:true")
        assert status == 200 and reply["accepted"] == 1
        status, reply = post(b"symbol:A,\nprice:cheap")
        assert status == 400 and "price" in reply["errors"][0]["reason"]
        assert [r for _, r in recorder.events] == [("A", 1.5, 1, 2, True)]
    finally:
        src.stop()


def test_a_bad_source_map_is_a_config_error(router, key):
    with pytest.raises(SourceConfigError, match="no option 'nope'"):
        build_source(
            {"type": "zmq", "url": "tcp://127.0.0.1:0"},
            router,
            key,
            mapping={"type": "json", "options": {"nope": "1"}},
        )


def test_http_source_map_without_port_applies_to_the_worker_endpoint(router, recorder, key):
    from receivers.http_receiver import create_app

    src = build_source({"type": "http"}, router, key, mapping=MapSpec("xml").to_dict()).start()
    client = create_app(router).test_client()
    url = "/events/{}/{}/{}".format(*key)
    body = (
        "<events><event><payloadData><symbol>X</symbol><price>2.5</price><volume>3</volume>"
        "<qty>4</qty><ok>true</ok></payloadData></event></events>"
    )
    assert client.post(url, data=body).status_code == 200
    assert [r for _, r in recorder.events] == [("X", 2.5, 3, 4, True)]
    assert client.post(url + "?map=passThrough", json=[["Z", 1.0, 1, 1, False]]).status_code == 200
    assert client.post(url + "?map=csv&delimiter=;", data="W;2;2;2;true").status_code == 200
    assert client.post(url + "?map=yaml", data="x").status_code == 400
    assert [r for _, r in recorder.events][1:] == [("Z", 1.0, 1, 1, False), ("W", 2.0, 2, 2, True)]
    src.stop()  # the endpoint takes this system's JSON again
    assert client.post(url, json=[["Y", 1.0, 1, 1, False]]).status_code == 200
    assert [r for _, r in recorder.events][-1] == ("Y", 1.0, 1, 1, False)
