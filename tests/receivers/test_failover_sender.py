"""FailoverSender against two real HTTP receivers whose stream goes through the worker's own
logged inflow (a write-ahead log on disk; no spout behind it): replies carry where the log
stands, committed batches are dropped, and a lost worker's unacknowledged batches go to the
other one, counted."""

import pytest

from cep.worker.logged_inflow import LoggedSpoutConnection
from receivers.failover_sender import FailoverSender
from receivers.http_receiver import HttpServer, create_app
from receivers.router import IngestRouter
from receivers.wal.log import WriteAheadLog

KEY = ("1", "StockAnalysis", "StockStream")


class LoggedWorker:
    """An HTTP receiver whose stream is a LoggedSpoutConnection over a real log."""

    def __init__(self, path, name, stock_def):
        self.wal = WriteAheadLog(str(path / name)).open()
        self.inflow = LoggedSpoutConnection(
            None,
            1,
            "StockAnalysis",
            "StockStream",
            name,
            wal=self.wal,
            receiver_id=f"{name}/1/S/StockStream#1",
        )
        self.router = IngestRouter()
        self.router.register(KEY, stock_def, self.inflow.offer, self.inflow.progress)
        self.server = HttpServer(create_app(self.router)).start()
        self.url = self.server.url

    def logged(self):
        """The first field of every event in the log, in order."""
        return [e[1][0] for _, events in self.wal.read(-1) for e in events]

    def stop(self):
        self.server.stop()
        self.wal.close()


@pytest.fixture
def workers(tmp_path, stock_def):
    made = [LoggedWorker(tmp_path, n, stock_def) for n in ("w1", "w2")]
    yield made
    for w in made:
        try:
            w.stop()
        except Exception:  # noqa: BLE001 - one stopped by the test already
            pass


def batch(first, n=5):
    return [{"data": [f"S{i}", 1.0, 2, 3, True]} for i in range(first, first + n)]


def test_the_reply_says_where_the_log_stands(workers):
    w1 = workers[0]
    sender = FailoverSender([w1.url], *KEY)
    assert sender.send(batch(0)) == 5
    assert sender.pending_events == 5  # in the log, not committed by any checkpoint
    assert sender.pending[0].appended == 4 and sender.pending[0].receiver_id.startswith("w1/")
    w1.inflow.commit(4)  # what a completed checkpoint's commit does
    assert sender.poll() == 0 and sender.stats.acknowledged == 5


def test_a_commit_acknowledges_only_what_it_covers(workers):
    w1 = workers[0]
    sender = FailoverSender([w1.url], *KEY)
    sender.send(batch(0))
    sender.send(batch(5))
    w1.inflow.commit(6)  # covers the first batch, part of the second
    assert sender.poll() == 5 and sender.stats.acknowledged == 5


def test_a_lost_worker_s_unacknowledged_batches_go_to_the_next_one(workers):
    w1, w2 = workers
    sender = FailoverSender([w1.url, w2.url], *KEY, timeout=2.0)
    sender.send(batch(0))
    w1.inflow.commit(4)
    sender.send(batch(5))  # its reply still says committed 4: the first batch is acked
    sender.send(batch(10))
    assert sender.stats.acknowledged == 5 and sender.pending_events == 10
    w1.server.stop()  # the worker is lost before a checkpoint covered offsets 5..14
    assert sender.send(batch(15)) == 5
    assert sender.stats.failovers == 1 and sender.current == 1
    assert sender.stats.resent == 10  # exactly the unacknowledged ones, counted
    assert [e["data"][0] for e in sender.stats.resent_ids] == [f"S{i}" for i in range(5, 15)]
    # the next worker got them ahead of the new batch, each once
    assert w2.logged() == [f"S{i}" for i in range(5, 20)]
    assert w1.logged() == [f"S{i}" for i in range(0, 15)]


def test_invalid_events_are_counted_not_resent(workers):
    w1 = workers[0]
    sender = FailoverSender([w1.url], *KEY)
    events = batch(0, 3)
    events[1] = {"data": ["X", "cheap", 2, 3, True]}
    assert sender.send(events) == 2
    assert sender.stats.rejected == 1 and sender.pending_events == 2


def test_no_worker_answering_raises_after_give_up(workers):
    w1 = workers[0]
    w1.server.stop()
    sender = FailoverSender([w1.url], *KEY, timeout=0.5, give_up_s=1.0)
    with pytest.raises(ConnectionError, match="answered"):
        sender.send(batch(0))


class Checkpointer:
    """Commits everything a worker's log holds every 0.1 s (what completed checkpoints do)."""

    def __init__(self, worker):
        import threading

        self.worker, self.halt = worker, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.halt.wait(0.1):
            if self.worker.wal.next_offset:
                self.worker.inflow.commit(self.worker.wal.next_offset - 1)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.halt.set()
        self.thread.join(5)


def test_cep_feed_with_two_workers_goes_on_at_the_second_and_waits_for_commits(
    workers, tmp_path, capsys
):
    import json

    from cep.cli.main import main

    w1, w2 = workers
    path = tmp_path / "events.jsonl"
    path.write_text(
        "".join(
            json.dumps({"stream": "StockStream", "data": [f"S{i}", 1.0, 2, 3, True]}) + "\n"
            for i in range(30)
        )
    )
    w1.server.stop()  # the first worker is lost before the feed starts
    with Checkpointer(w2):
        code = main(
            [
                "feed",
                "StockAnalysis",
                str(path),
                "--tenant",
                "1",
                "--worker",
                f"{w1.url},{w2.url}",
                "--rate",
                "1000",
                "--batch",
                "10",
                "--ack-timeout",
                "30",
            ]
        )
    err = capsys.readouterr().err
    assert code == 0, err
    assert "every accepted event committed" in err and "sent 30, accepted 30" in err, err
    assert w2.logged() == [f"S{i}" for i in range(30)]


def test_the_simulator_goes_on_from_the_chunk_that_failed(workers):
    """A retried run() (cep feed --retry) does not send the events before the failure again."""
    from receivers.simulator import Simulator

    w1 = workers[0]
    events = [(n, "StockStream", None, [f"S{n}", 1.0, 2, 3, True]) for n in range(20)]
    sim = Simulator(w1.url, 1, "StockAnalysis", events, rate=10000, batch=5)
    calls = {"n": 0}
    real = sim.send_chunk

    def flaky(chunk):
        calls["n"] += 1
        if calls["n"] == 3:
            raise ConnectionError("the worker did not answer")
        real(chunk)

    sim.send_chunk = flaky
    with pytest.raises(ConnectionError):
        sim.run()
    assert sim.run() == (20, 20)
    assert w1.logged() == [f"S{i}" for i in range(20)]
