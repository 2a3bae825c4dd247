"""SnapshotWriter.close: the submitted writes finish, their reports come back, and the writer's
thread ends (a task closed in a reused executor process leaves no thread behind); a later
submit starts a new thread. Participant.close closes its writer."""

import threading

from topology.checkpoint.writer import SnapshotWriter


class ListStore:
    def __init__(self):
        self.blobs = []

    def write_blob(self, cid, task, blob):
        self.blobs.append((cid, task, len(blob)))
        return len(blob)


def writer_threads():
    return [t for t in threading.enumerate() if t.name == "checkpoint-writer close-test"]


def test_close_finishes_the_writes_and_ends_the_thread_and_a_new_submit_starts_one():
    store = ListStore()
    writer = SnapshotWriter(store, 7, "close-test")
    for cid in (1, 2, 3):
        writer.submit(cid, b"state-%d" % cid, {"checkpoint": cid}, 0.0)
    assert writer.close(5) is True
    assert not writer_threads()
    assert [r["checkpoint"] for r in writer.done()] == [1, 2, 3]
    assert [c for c, _, _ in store.blobs] == [1, 2, 3] and writer.written == 3
    writer.submit(4, b"state-4", {"checkpoint": 4}, 0.0)  # a closed writer still writes
    assert writer.flush(5) and [r["checkpoint"] for r in writer.done()] == [4]
    assert writer.close(5) and not writer_threads()
    assert SnapshotWriter(store, 7, "close-test").close(1) is True  # never started: nothing


def test_participant_close_ends_its_writer_thread(tmp_path):
    from tests.topology.checkpoint.test_ckpt_async import bolt_participant
    from topology.checkpoint.store import FileStore

    part, inst, events, task = bolt_participant(FileStore(tmp_path, "async-ckpt", "k"))
    part.writer.submit(1, b"x", {"checkpoint": 1, "task": task}, 0.0)
    thread = part.writer._thread
    part.close()
    assert not thread.is_alive()
    assert [e[1]["checkpoint"] for e in events if e[0] == "ack"] == [1]
    inst.close()
