"""Receivers: how events enter a worker (HTTP JSON, ZeroMQ msgpack, @source files and sockets).

Every receiver hands raw events to an `ingest(key, events)` callable (key = StreamKey) and gets an
IngestResult back; validation against the stream definition is receivers.validation's job."""

from receivers.validation import IngestResult, StreamKey, EventValidator

__all__ = ["IngestResult", "StreamKey", "EventValidator"]
