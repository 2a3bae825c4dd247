"""The publisher bolt's side of delivery (issue 11) over real ZeroMQ sockets, a real registry and
the real worker publisher service: identities, the start notice ahead of a restored queue, the
commit notice after a completed checkpoint, and a restarted bolt whose replay the sinks
recognise (exactly-once: each row once; at-least-once with dedup off: extras = counted)."""

import json
import time

import pytest

from manager.registry.client import RegistryClient
from manager.registry.service import RegistryService
from publishers.bolt import PublisherBolt
from publishers.service import PublisherService
from publishers.sink_set import SinkSet
from topology.component import Batch, Collector, Context

T, P, S = -1234, "Deliver", "Out"


@pytest.fixture
def worker(tmp_path):
    reg = RegistryService(port=0, bind_host="127.0.0.1", liveness=600)
    reg.start()
    specs = {
        S: [
            {
                "type": "file",
                "options": {"path": str(tmp_path / "eo.jsonl"), "delivery": "exactly-once"},
            },
            {"type": "file", "options": {"path": str(tmp_path / "all.jsonl"), "dedup": "false"}},
        ]
    }
    svc = PublisherService(SinkSet.from_specs(specs, "w1"), "127.0.0.1").start()
    client = RegistryClient(f"tcp://127.0.0.1:{reg.port}")
    client.register("publisher", T, P, "127.0.0.1", svc.port, worker="w1")
    yield f"tcp://127.0.0.1:{reg.port}", svc, tmp_path
    svc.stop()
    client.close()
    reg.stop()


def new_bolt(url):
    bolt = PublisherBolt(
        {
            "registry": url,
            "tenant": T,
            "plan": P,
            "streams": {S: ["seq"]},
            "host": "127.0.0.1",
            "retry_interval": 0.05,
            "connect_timeout": 1.0,
        }
    )
    bolt.prepare(Context(f"{P}[{T}]", "out", 0, 1, 0, {}), Collector("out", {}))
    return bolt


def send(bolt, first, n):
    bolt.execute(Batch([(1000 + i, i) for i in range(first, first + n)], S))


def rows(path):
    return (
        [json.loads(line)["data"][0] for line in path.read_text().splitlines()]
        if path.exists()
        else []
    )


def wait(cond, what, timeout=60):  # generous: a loaded machine must not fail the test
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_restarted_bolt_replays_and_the_sinks_recognise_it(worker):
    url, svc, out = worker
    bolt = new_bolt(url)
    bolt.checkpoint_restored(None)  # checkpoints on, fresh state: epoch 0
    send(bolt, 0, 5)
    wait(lambda: len(rows(out / "all.jsonl")) == 5, "5 rows sent")
    state = bolt.checkpoint_state()  # barrier 1, with an empty queue
    bolt.checkpoint_barrier(1)
    send(bolt, 5, 5)  # epoch 1
    wait(lambda: len(rows(out / "all.jsonl")) == 10, "10 rows at the at-least-once sink")
    assert rows(out / "eo.jsonl") == []  # nothing committed yet
    bolt.checkpoint_completed(1)  # covers epoch 0
    bolt.checkpoint_completed(1)  # repeated by every control message: once
    wait(lambda: rows(out / "eo.jsonl") == list(range(5)), "epoch 0 committed")
    bolt.cleanup()  # the task dies (its epoch 1 was staged only)

    again = new_bolt(url)  # the stage retry: restore checkpoint 1
    again.restore_state(state)
    again.checkpoint_restored(1)
    send(again, 5, 5)  # the replay regenerates epoch 1
    send(again, 10, 2)
    again.checkpoint_barrier(2)
    again.checkpoint_completed(2)
    wait(lambda: rows(out / "eo.jsonl") == list(range(12)), "every row once")
    wait(lambda: len(rows(out / "all.jsonl")) == 17, "the replayed rows again")
    m = svc.metrics()
    assert rows(out / "all.jsonl") == list(range(10)) + list(range(5, 12))
    assert m["streams"][S]["duplicates"] == 5 and m["duplicates"] == 5
    assert m["publishers"][f"{P}[{T}]:out:0"]["starts"] == 2
    assert m["publishers"][f"{P}[{T}]:out:0"]["restored"] == 1

    # the sink writes the committed rows, then counts them: wait for its counters too
    def eo():
        sink = svc.metrics()["streams"][S]["sinks"][0]
        return sink["committed"], sink["pending"], sink["discarded"]

    wait(lambda: eo() == (2, 0, 5), "the exactly-once sink's counters: 2 committed, 5 discarded")
    again.cleanup()


def test_without_checkpoints_output_is_epoch_minus_one_and_written_at_once(worker):
    url, svc, out = worker
    bolt = new_bolt(url)  # no restore call: the topology takes none
    send(bolt, 0, 3)
    wait(lambda: rows(out / "eo.jsonl") == [0, 1, 2], "exactly-once written at once")
    assert bolt.epoch == -1
    bolt.cleanup()


def test_a_restored_queue_goes_after_the_start_notice_and_counts_as_duplicates(worker):
    """Frames queued at the checkpoint come back with the restore: the ones the worker had
    (sent before the task died) are duplicates, the others are new; all after `start`."""
    from cep.protocol.frames import encode_output

    url, svc, out = worker
    pub = f"{P}[{T}]:out:0"
    bolt = new_bolt(url)
    bolt.checkpoint_restored(None)
    send(bolt, 0, 4)  # epoch 0, seq 0..3, delivered
    wait(lambda: len(rows(out / "all.jsonl")) == 4, "4 rows")
    bolt.cleanup()
    queued = [[encode_output(S, [(1000 + i, [i]) for i in range(2, 6)], pub, 0, 2), 4]]
    again = new_bolt(url)
    again.restore_state({"pending": queued})  # seq 2..5 of epoch 0: 2, 3 seen, 4, 5 new
    again.checkpoint_restored(1)  # start, the queue, then commit 1 again
    wait(lambda: rows(out / "eo.jsonl") == list(range(6)), "epoch 0 committed, each row once")
    wait(lambda: len(rows(out / "all.jsonl")) == 8, "the queue re-sent")
    assert svc.metrics()["streams"][S]["duplicates"] == 2
    again.cleanup()
