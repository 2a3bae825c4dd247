"""The receivers' write-ahead log on real files: offsets, segment roll, restart, torn tails,
corrupt records, commit, caps and each durability mode."""

import os

import pytest

from receivers.wal import WriteAheadLog
from receivers.wal import segment as seg
from receivers.wal.exceptions import LogFullError, WalConfigError, WalError


def batch(start, n=100):
    return [[1_700_000_000_000 + i, ["IBM", 1.5, i]] for i in range(start, start + n)]


def replayed(wal, after=-1, before=None):
    out = []
    for first, events in wal.read(after, before):
        assert [e[1][2] for e in events] == list(range(first, first + len(events)))
        out.extend(e[1][2] for e in events)
    return out


@pytest.fixture
def open_log(tmp_path):
    opened = []

    def make(**kw):
        wal = WriteAheadLog(str(tmp_path / "log"), **kw).open()
        opened.append(wal)
        return wal

    yield make
    for wal in opened:
        wal.close()


@pytest.mark.parametrize("mode", ["fsync", "os", "none"])
def test_each_durability_mode_appends_contiguous_offsets_and_reads_them_back(open_log, mode):
    wal = open_log(durability=mode)
    firsts = [wal.append(batch(i * 100)) for i in range(5)]
    assert firsts == [0, 100, 200, 300, 400]
    assert replayed(wal) == list(range(500))
    assert wal.metrics()["appended_offset"] == 499


def test_unknown_durability_is_a_config_error(tmp_path):
    with pytest.raises(WalConfigError, match="fsync, os, none"):
        WriteAheadLog(str(tmp_path), durability="sometimes")


def test_segments_roll_by_size(open_log, tmp_path):
    wal = open_log(segment_bytes=4096)
    for i in range(20):
        wal.append(batch(i * 100))
    files = seg.list_segments(str(tmp_path / "log"))
    assert len(files) > 3 and wal.metrics()["segments"] == len(files)
    assert files[0][0] == 0 and all(b > a for (a, _), (b, _) in zip(files, files[1:]))
    assert all(os.path.getsize(p) < 4096 + 3000 for _, p in files)
    assert replayed(wal, after=1049) == list(range(1050, 2000))


def test_restart_recovers_the_next_offset(tmp_path):
    d = str(tmp_path / "log")
    wal = WriteAheadLog(d, segment_bytes=4096).open()
    for i in range(7):
        wal.append(batch(i * 100))
    wal.close()
    again = WriteAheadLog(d, segment_bytes=4096).open()
    try:
        assert again.append(batch(700)) == 700
        assert replayed(again) == list(range(800))
    finally:
        again.close()


def test_torn_tail_is_truncated_with_a_warning(tmp_path, caplog):
    d = str(tmp_path / "log")
    wal = WriteAheadLog(d).open()
    wal.append(batch(0))
    wal.append(batch(100))
    wal.close()
    path = seg.list_segments(d)[-1][1]
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:  # the second record half written
        fh.truncate(size - 700)
    again = WriteAheadLog(d).open()
    try:
        assert "torn tail" in caplog.text
        assert again.metrics()["truncated_bytes"] > 0
        assert again.append(batch(100)) == 100  # the torn record was never acknowledged
        assert replayed(again) == list(range(200))
    finally:
        again.close()


def test_flipped_byte_in_the_middle_is_reported_and_others_stay_readable(tmp_path, caplog):
    d = str(tmp_path / "log")
    wal = WriteAheadLog(d).open()
    for i in range(3):
        wal.append(batch(i * 100))
    wal.close()
    path = seg.list_segments(d)[-1][1]
    rec_size = os.path.getsize(path) // 3
    with open(path, "r+b") as fh:  # a byte in the payload of the middle record
        fh.seek(rec_size + 300)
        b = fh.read(1)
        fh.seek(rec_size + 300)
        fh.write(bytes([b[0] ^ 0xFF]))
    again = WriteAheadLog(d).open()
    try:
        m = again.metrics()
        assert m["corrupt_records"] == 1 and "CRC32" in m["last_corruption"]
        assert "corrupt record" in caplog.text
        assert replayed(again) == list(range(100)) + list(range(200, 300))
        assert again.append(batch(300)) == 300  # no offset reused
    finally:
        again.close()


def test_commit_deletes_covered_segments_only(open_log, tmp_path):
    wal = open_log(segment_bytes=4096)
    for i in range(20):
        wal.append(batch(i * 100))
    before = seg.list_segments(str(tmp_path / "log"))
    cut = before[3][0] - 1  # the last offset of the third segment
    assert wal.commit(cut) == 3
    after = seg.list_segments(str(tmp_path / "log"))
    assert after == before[3:]
    assert wal.metrics()["committed_offset"] == cut
    assert replayed(wal, after=cut) == list(range(cut + 1, 2000))
    assert wal.commit(cut - 5) == 0  # going back is a no-op


def test_committed_offset_survives_restart(tmp_path):
    d = str(tmp_path / "log")
    wal = WriteAheadLog(d).open()
    wal.append(batch(0))
    wal.commit(49)
    wal.close()
    again = WriteAheadLog(d).open()
    try:
        assert again.metrics()["committed_offset"] == 49
    finally:
        again.close()


def test_size_cap_refuses_with_the_reason(open_log):
    wal = open_log(max_bytes=5000)
    with pytest.raises(LogFullError, match="wal.max_bytes"):
        for i in range(50):
            wal.append(batch(i * 100))
    assert wal.metrics()["full_refusals"] == 1
    wal.commit(wal.metrics()["appended_offset"])
    assert wal.metrics()["committed_offset"] >= 0


def test_age_cap_refuses_until_committed(open_log):
    wal = open_log(max_age_s=0.2)
    wal.append(batch(0))
    import time

    time.sleep(0.3)
    with pytest.raises(LogFullError, match="wal.max_age_s"):
        wal.append(batch(100))
    wal.commit(99)
    assert wal.append(batch(100)) == 100


def test_a_second_writer_on_the_same_folder_is_refused(open_log, tmp_path):
    open_log()
    with pytest.raises(WalError, match="in use by another worker"):
        WriteAheadLog(str(tmp_path / "log")).open()


def test_age_is_of_the_oldest_uncommitted_event_not_of_the_segment(open_log):
    """A slow stream fills a segment over days: committed data must not age the log."""
    import time

    wal = open_log(max_age_s=1.0)
    wal.append(batch(0))
    time.sleep(1.1)
    wal.commit(99)
    appended = time.monotonic()
    wal.append(batch(100))  # same segment as the first batch, a second later
    # the age counts from the oldest uncommitted append, not the segment's first (no
    # threshold: however slow the machine, it cannot exceed the time since that append)
    # (+2 ms: the log stamps whole milliseconds and rounds the age to them)
    assert wal.metrics()["oldest_uncommitted_age_s"] <= time.monotonic() - appended + 0.002
    assert wal.append(batch(200)) == 200  # not over the 1 s cap
    wal.commit(299)
    assert wal.metrics()["oldest_uncommitted_age_s"] == 0.0


def test_age_survives_a_restart(tmp_path):
    import time

    d = str(tmp_path / "log")
    wal = WriteAheadLog(d).open()
    wal.append(batch(0))
    wal.close()
    time.sleep(0.3)
    again = WriteAheadLog(d).open()
    try:
        assert again.metrics()["oldest_uncommitted_age_s"] >= 0.3
    finally:
        again.close()
