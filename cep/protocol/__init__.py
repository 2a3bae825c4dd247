"""The shared protocol of manager, workers and topologies (PROTOCOL.md): frames (every
msgpack message on the wire, one codec), the endpoint registry client, machine identity and the
settings loader. Neutral ground: it imports nothing of manager/, receivers/, publishers/,
topology/ or cep/worker/, which all import it."""
