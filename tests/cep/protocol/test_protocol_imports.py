"""The protocol is neutral ground: receivers, publishers, topology and the CEP worker take it
from cep.protocol, never from manager/; cep.protocol itself imports none of them."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
CLIENTS = ["receivers", "publishers", "topology", "cep/worker"]
PROTOCOL_HOMES = ("manager.registry", "manager.exceptions")  # where the protocol used to live
SIDES = ("manager", "receivers", "publishers", "topology", "cep.worker")


def _imports(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def _under(module, prefixes):
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("package", CLIENTS)
def test_components_take_the_protocol_from_cep_protocol_not_the_manager(package):
    found = [
        f"{p.relative_to(ROOT)}: {m}"
        for p in sorted((ROOT / package).rglob("*.py"))
        for m in _imports(p)
        if _under(m, PROTOCOL_HOMES)
    ]
    assert found == []


def test_cep_protocol_imports_no_side_of_the_protocol():
    found = [
        f"{p.relative_to(ROOT)}: {m}"
        for p in sorted((ROOT / "cep" / "protocol").rglob("*.py"))
        for m in _imports(p)
        if _under(m, SIDES)
    ]
    assert found == []


# the copies of the frame format the issue found, and the modules that used them
FORMER_COPIES = [
    "topology/task.py",
    "topology/shared_app.py",
    "topology/shared_launch.py",
    "topology/driver.py",
    "topology/control.py",
    "manager/registry/wire.py",
    "manager/registry/service.py",
    "receivers/spout.py",
    "receivers/zmq_receiver.py",
    "publishers/service.py",
    "publishers/zmq_sink.py",
    "publishers/bolt.py",
    "publishers/sink_set.py",
    "cep/worker/inflow.py",
    "cep/worker/logged_inflow.py",
]


@pytest.mark.parametrize("path", FORMER_COPIES)
def test_the_former_copies_of_the_frame_format_use_the_codec(path):
    """No second copy of the frame format: these modules encode and decode frames with
    cep/protocol/frames.py only (no msgpack of their own)."""
    assert "msgpack" not in set(_imports(ROOT / path))


# msgpack outside the codec, each for something that is not a frame on the wire
NOT_WIRE = {
    "receivers/wal/segment.py": "the write-ahead log's record format on disk",
    "topology/checkpoint/store.py": "the checkpoint blob format on disk",
    "publishers/marks_log.py": "the duplicate marks file of a worker on disk",
    "topology/routing.py": "fields grouping's stable hash of the grouping values",
}


def test_no_module_of_the_system_has_a_frame_format_of_its_own():
    """Every msgpack frame on the wire goes through cep/protocol/frames.py: a module that
    imports msgpack anywhere else is a second copy of the format (issue 12)."""
    found = sorted(
        str(p.relative_to(ROOT))
        for package in ("cep", "receivers", "publishers", "topology", "manager")
        for p in (ROOT / package).rglob("*.py")
        if any(_under(m, ("msgpack",)) for m in _imports(p))
    )
    assert found == sorted(["cep/protocol/frames.py", *NOT_WIRE])


@pytest.mark.parametrize("path", ["topology/wire.py", "publishers/frames.py"])
def test_the_removed_copies_stay_removed(path):
    assert not (ROOT / path).exists()
