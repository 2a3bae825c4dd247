"""Wire formats: data frames between instances, control and report messages with the driver.

A data message is two ZeroMQ frames: header ``msgpack([stream, source component, origin_ts,
source task])`` and payload ``msgpack(rows)``. A checkpoint barrier is the same two frames with
stream ``BARRIER``, the checkpoint id in place of origin_ts and an empty payload (see
topology/README.md, "Checkpoints"). Control (driver PUB -> tasks) is ``{"state", "seq"}`` with state
active|inactive|stop; reports (tasks PUSH -> driver) are dicts with a ``type``.
"""
import msgpack

_packer = msgpack.Packer(use_bin_type=True)
pack = _packer.pack


def unpack(data):
    """Decode a control/report message or a header (lists stay lists)."""
    return msgpack.unpackb(data, raw=False)


def unpack_rows(payload):
    """Decode a payload into a tuple of row tuples."""
    return msgpack.unpackb(payload, raw=False, use_list=False)


BARRIER = "\x00barrier"  # no declared stream can have this name


def header(stream, source, origin_ts, task=-1):
    return pack((stream, source, origin_ts, task))


def barrier(source, checkpoint_id, task):
    """The two frames of checkpoint ``checkpoint_id``'s barrier from task ``task``."""
    return pack((BARRIER, source, checkpoint_id, task)), b""
