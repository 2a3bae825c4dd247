"""A standalone worker with mapped sources and sinks, real sockets and files: XML over the
HTTP source's own port and CEP 4.0 text lines from a file source go through the engine and
come out as CEP 4.0 JSON and as a custom text template; an unreadable message is counted and
its neighbours go on."""

import json
import socket
import urllib.error
import urllib.request

from tests.worker.test_worker_standalone import make_worker, wait_for


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_mapped_http_and_file_sources_and_mapped_file_sinks(tmp_path):
    port = free_port()
    text_in = tmp_path / "quotes.txt"
    text_in.write_text(
        "symbol:FILE1, price:20.5, volume:1\nsymbol:FILE2, price:x, volume:2\n"
        "symbol:FILE3, price:30.0, volume:3\n"
    )
    out_json, out_text = tmp_path / "o.json", tmp_path / "o.txt"
    plan = tmp_path / "m.siddhiql"
    plan.write_text(f"""@Plan:name('Mapped')
@source(type='http', port='{port}', host='127.0.0.1',
        @map(type='xml', enclosing.element='//portfolio',
             @attributes(symbol='stock/sym', price='stock/price', volume='//volume')))
define stream Quotes (symbol string, price double, volume long);
@source(type='file', path='{text_in}', @map(type='text'))
define stream FileQuotes (symbol string, price double, volume long);
@sink(type='file', path='{out_json}', @map(type='json'))
@sink(type='file', path='{out_text}', @map(type='text', @payload('{{{{symbol}}}} at {{{{price}}}}')))
define stream High (symbol string, price double);
from Quotes[price > 10] select symbol, price insert into High;
from FileQuotes select symbol, price insert into High;
""")
    w = make_worker(tmp_path, [str(plan)]).start()
    try:
        assert wait_for(lambda: "-1234/Mapped" in w.status()["plans"])
        body = (
            "<portfolio>"
            "<q><stock><sym>WSO2</sym><price>55.5</price></stock><volume>10</volume></q>"
            "<q><stock><sym>LOW</sym><price>5</price></stock><volume>1</volume></q>"
            "<q><stock><sym>BAD</sym><price>n/a</price></stock><volume>1</volume></q>"
            "<q><stock><sym>IBM</sym><price>99</price></stock><volume>7</volume></q>"
            "</portfolio>"
        ).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/",
            data=body,
            method="POST",
            headers={"Content-Type": "application/xml"},
        )
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                reply, status = json.loads(resp.read()), resp.status
        except urllib.error.HTTPError as exc:
            reply, status = json.loads(exc.read()), exc.code
        assert status == 207 and reply["accepted"] == 3 and reply["rejected"] == 1
        assert "price" in reply["errors"][0]["reason"]

        def symbols():
            if not out_json.exists():
                return []
            return sorted(
                json.loads(x)["event"]["payloadData"]["symbol"]
                for x in out_json.read_text().splitlines()
            )

        assert wait_for(lambda: symbols() == ["FILE1", "FILE3", "IBM", "WSO2"])
        lines = sorted(out_text.read_text().splitlines())
        assert lines == ["FILE1 at 20.5", "FILE3 at 30.0", "IBM at 99.0", "WSO2 at 55.5"]
        doc = json.loads(out_json.read_text().splitlines()[0])
        assert set(doc["event"]) == {"payloadData"}
    finally:
        w.stop()
