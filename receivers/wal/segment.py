"""Segment files of the write-ahead log and their record format.

A segment is `<dir>/<first offset, 20 digits>.wal`, a sequence of records:

    header  <I length><I crc32><Q first_offset><I count><Q append_ms>   (28 bytes, little endian)
    payload msgpack array of `count` events ([ts, [values]])

`length` is the payload's size; the CRC32 covers the header fields after it and the payload,
so a flipped bit anywhere in a record is detected. Offsets are contiguous within a log: a
record's events have offsets first_offset .. first_offset + count - 1."""

import logging
import os
import struct
import zlib
from dataclasses import dataclass

import msgpack

from receivers.wal.exceptions import CorruptRecordError

log = logging.getLogger(__name__)
HEADER = struct.Struct("<IIQIQ")
SUFFIX = ".wal"
MAX_PAYLOAD = 1 << 30  # a length beyond this is a corrupt header, not a record
_pack = msgpack.Packer(use_bin_type=True).pack


def encode_record(first_offset, events, append_ms):
    """The bytes of one record holding `events` (a list of [ts, values] pairs)."""
    payload = _pack(events)
    tail = HEADER.pack(len(payload), 0, first_offset, len(events), append_ms)[8:]
    crc = zlib.crc32(payload, zlib.crc32(tail))
    return HEADER.pack(len(payload), crc, first_offset, len(events), append_ms) + payload


def segment_name(base_offset):
    return f"{base_offset:020d}{SUFFIX}"


def list_segments(directory):
    """[(base offset, path)] of the segment files in `directory`, by offset."""
    found = []
    for name in os.listdir(directory):
        if name.endswith(SUFFIX) and name[: -len(SUFFIX)].isdigit():
            found.append((int(name[: -len(SUFFIX)]), os.path.join(directory, name)))
    return sorted(found)


@dataclass
class Record:
    """One decoded record header; `events()` decodes the payload."""

    position: int
    size: int  # header + payload bytes
    first_offset: int
    count: int
    append_ms: int
    payload: bytes

    @property
    def end_offset(self):
        return self.first_offset + self.count

    def events(self):
        return msgpack.unpackb(self.payload, raw=False, strict_map_key=False)


def _parse(data, pos):
    """The Record at `pos` in `data`; None if it does not fit (torn); CorruptRecordError."""
    if len(data) - pos < HEADER.size:
        return None
    length, crc, first, count, ms = HEADER.unpack_from(data, pos)
    if length > MAX_PAYLOAD:
        raise CorruptRecordError(f"record at byte {pos}: impossible length {length}")
    end = pos + HEADER.size + length
    if end > len(data):
        return None
    tail = data[pos + 8 : pos + HEADER.size]
    payload = bytes(data[pos + HEADER.size : end])
    if zlib.crc32(payload, zlib.crc32(tail)) != crc:
        raise CorruptRecordError(
            f"record at byte {pos} (offsets {first}..{first + count - 1} "
            f"by its header): CRC32 mismatch"
        )
    return Record(pos, end - pos, first, count, ms, payload)


@dataclass
class ScanResult:
    """What a scan of one segment found: good records, corrupt spans, where valid data ends."""

    records: list
    corrupt: list  # [(byte position, message)]
    valid_end: int  # byte after the last good record (a torn tail starts here)
    size: int


def scan(path):
    """Read every record of a segment. A bad record followed by good ones is corrupt (reported,
    skipped: the scan resynchronises on the next record whose CRC holds); a bad or incomplete
    record with nothing good after it is a torn tail (valid_end stops before it)."""
    with open(path, "rb") as fh:
        data = fh.read()
    records, corrupt, pos, valid_end = [], [], 0, 0
    while pos < len(data):
        try:
            rec = _parse(data, pos)
        except CorruptRecordError as exc:
            nxt = _resync(data, pos + 1)
            if nxt is None:
                break  # nothing good after it: a torn tail
            corrupt.append((pos, str(exc)))
            pos = nxt
            continue
        if rec is None:
            break
        records.append(rec)
        pos = valid_end = pos + rec.size
    return ScanResult(records, corrupt, valid_end, len(data))


def _resync(data, start):
    """Position of the next record at or after `start` whose CRC holds, or None."""
    for pos in range(start, len(data) - HEADER.size + 1):
        try:
            if _parse(data, pos) is not None:
                return pos
        except CorruptRecordError:
            continue
    return None


def truncate(path, size):
    """Cut a torn tail off a segment (logged by the caller)."""
    with open(path, "r+b") as fh:
        fh.truncate(size)
        os.fsync(fh.fileno())
