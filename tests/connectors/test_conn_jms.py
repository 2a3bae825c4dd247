"""@source/@sink(type='jms') over STOMP against a real ActiveMQ (Debian's activemq): a queue
and a topic in and out; a queue message the worker did not take is delivered again after the
source reconnects (client-individual acknowledgements)."""

import time

import pytest

from publishers.sinks import build_sink
from receivers.sources import build_source
from tests.connectors.conftest import KEY, wait_for


def source(server, router, **options):
    return build_source({"type": "jms", "url": server.url, **options}, router, KEY)


def sink(server, **options):
    return build_sink({"type": "jms", "options": {"url": server.url, **options}}, "Ticks")


@pytest.mark.parametrize("destination", ["/queue/ticks", "/topic/ticks"])
def test_events_in_and_out_of_a_queue_and_a_topic(activemq, router, taken, destination):
    pump = source(activemq, router, destination=destination).start()
    out = sink(activemq, destination=destination)
    try:
        out.write_batch([(1000 + i, [i, 0.5]) for i in range(500)])
        assert out.written == 500
        assert wait_for(lambda: len(taken.ids()) == 500)
        assert taken.ids() == list(range(500))
    finally:
        out.close()
        pump.stop()


def test_a_queue_message_not_taken_is_delivered_again(activemq, router, taken):
    out = sink(activemq, destination="/queue/keep")
    first = source(activemq, router, destination="/queue/keep").start()
    taken.full = True
    try:
        out.write_batch([(1, [i, 1.0]) for i in range(40)])
        time.sleep(1.0)  # delivered to the source, refused by the worker
        assert first.accepted == 0
        first.stop()
        taken.full = False
        again = source(activemq, router, destination="/queue/keep").start()
        try:
            assert wait_for(lambda: sorted(set(taken.ids())) == list(range(40)))
        finally:
            again.stop()
    finally:
        out.close()


def test_a_destination_that_is_not_a_queue_or_topic_is_refused(activemq, router):
    from receivers.exceptions import SourceConfigError

    with pytest.raises(SourceConfigError, match="must start with /queue/ or /topic/"):
        source(activemq, router, destination="orders")
