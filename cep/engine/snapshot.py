"""The snapshot envelope: b"CEPSNAP" + a version byte + pickle of {element name: state}."""

import pickle

from cep.errors import SnapshotError

MAGIC = b"CEPSNAP"
VERSION = 1


def dump(states):
    return MAGIC + bytes([VERSION]) + pickle.dumps(states, protocol=pickle.HIGHEST_PROTOCOL)


def load(data, expected_names):
    """The states in `data`, checked against the runtime's element names."""
    if not isinstance(data, (bytes, bytearray)) or not data.startswith(MAGIC) or len(data) < 9:
        raise SnapshotError("not a CEP runtime snapshot (bad header)")
    version = data[len(MAGIC)]
    if version != VERSION:
        raise SnapshotError(
            f"snapshot format version {version} is not supported "
            f"(this engine reads version {VERSION})"
        )
    try:
        states = pickle.loads(data[len(MAGIC) + 1 :])
    except Exception as exc:
        raise SnapshotError(f"corrupt snapshot: {exc}") from None
    names = set(states.get("elements", {}))
    if names != set(expected_names):
        missing = sorted(set(expected_names) - names)
        extra = sorted(names - set(expected_names))
        raise SnapshotError(
            f"snapshot is of another plan (missing {missing[:5]}, unknown {extra[:5]})"
        )
    return states
