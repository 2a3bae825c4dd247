"""Wire formats: data frames between instances, control and report messages with the driver.

A data message is two ZeroMQ frames: header ``msgpack([stream, source component, origin_ts])``
and payload ``msgpack(rows)``. Control (driver PUB -> tasks) is ``{"state", "seq"}`` with state
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


def header(stream, source, origin_ts):
    return pack((stream, source, origin_ts))
