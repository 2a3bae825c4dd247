"""Broker and network connectors: `@source`/`@sink` types that talk to message brokers and
services (NATS JetStream, MQTT, JMS over STOMP, Kafka, WebSocket, e-mail over SMTP).

- `registry`: every connector's type and option names, in one place (validation lists them);
- `connections`: where a connector may connect, and with which credentials: named
  connections from the operator's settings (`connections.brokers`), never a plan text;
- `mapping`: the one small step that turns a broker payload into events and an event into a
  payload (the JSON shape the HTTP receiver and the file sinks use);
- `pump`: drives a broker source into the worker's ingest router, acknowledging the broker
  only after the router took the events (the write-ahead log holds them);
- `position`: a source's broker position (stream sequence, partition offsets) kept next to
  the worker's state, so a restarted source resumes after what it last handed on.
"""
