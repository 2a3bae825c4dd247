"""Registry authentication (issue 10) on real ZeroMQ sockets: with CURVE off and the cluster
secret set, a request without the secret gets an error reply naming the reason (the service
carries on); the issue's attack, a fake receiver registered to take a plan's events after a
worker restart, is refused, and every event reaches the real spout."""

import logging
import time

import pytest

from cep.security import curve
from cep.worker.inflow import SpoutConnection
from manager.exceptions import RegistryError
from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService
from manager.server import Manager
from manager.settings import load_manager_settings
from receivers.spout import ReceiverSpout
from tests.manager.manager_fakes import FakeLauncher
from topology.component import Collector, Context

T, P, S = -1234, "Guarded", "S"
SECRET = "registry-test-secret-0123456789"


@pytest.fixture
def registry():
    svc = RegistryService(
        port=0,
        bind_host="127.0.0.1",
        heartbeat_interval=0.1,
        security=curve.LinkSecurity(secret=SECRET),
    )
    svc.start()
    yield svc, f"tcp://127.0.0.1:{svc.port}"
    svc.stop()


def member(url):
    return RegistryClient(url, security=curve.LinkSecurity(secret=SECRET))


@pytest.mark.parametrize("secret", [None, "", "wrong-secret", SECRET[:-1]])
def test_a_request_without_the_secret_gets_an_error_naming_the_reason(registry, secret, caplog):
    svc, url = registry
    outsider = RegistryClient(url, security=curve.LinkSecurity(secret=secret))
    caplog.set_level(logging.WARNING, "manager.registry")
    for call in (
        lambda: outsider.register("receiver", T, P, "127.0.0.1", 4666, streams=[S]),
        lambda: outsider.lookup("receiver", T, P, stream=S),
        lambda: outsider.worker_info(worker="fake"),
    ):
        with pytest.raises(RegistryError) as err:
            call()
        assert err.value.name == "Unauthorized"
        assert "cluster secret" in str(err.value)
        assert SECRET not in str(err.value)
    assert outsider.request("ping")["ok"]  # a health check needs no secret
    assert svc.refused == 3
    assert SECRET not in caplog.text
    assert member(url).register("receiver", T, P, "127.0.0.1", 4000, streams=[S])["ok"]
    assert svc.table.status(T, P)["receivers"][0]["endpoint"] == "tcp://127.0.0.1:4000"
    outsider.close()


def test_a_fake_receiver_cannot_take_a_plans_events_after_a_worker_restart(registry):
    """The issue's attack: a fake receiver registered with the registry and took all 10,000
    events of a plan after a worker restart. Now its registration is refused, the restarted
    worker's lookup finds the real spout, and the spout gets all 10,000 events."""
    svc, url = registry
    out = {S: ["ts", "n"]}
    spout = ReceiverSpout(
        {
            "registry": url,
            "tenant": T,
            "plan": P,
            "streams": {S: ["n"]},
            "host": "127.0.0.1",
            "tick_ms": 0,
        }
    )
    collector = Collector("EventReceiverSpout", out)
    spout.open(
        Context(
            f"{P}[{T}]",
            "EventReceiverSpout",
            0,
            1,
            0,
            out,
            security=curve.LinkSecurity(secret=SECRET),
        ),
        collector,
    )
    fake = RegistryClient(url, security=curve.OFF)
    with pytest.raises(RegistryError, match="cluster secret"):
        fake.register("receiver", T, P, "127.0.0.1", 4666, streams=[S])
    worker_registry = member(url)  # the restarted worker
    inflow = SpoutConnection(worker_registry, T, P, S, "w1", batch_size=1000).start()
    assert inflow.offer([(i, (i,)) for i in range(10_000)], wait=5.0) == 0
    got, deadline = [], time.monotonic() + 20
    while len(got) < 10_000 and time.monotonic() < deadline:
        spout.next_batch()
        got.extend(r for _, rows, _ in collector.take() for r in rows)
        time.sleep(0.005)
    assert [r[1] for r in got] == list(range(10_000))
    assert inflow.endpoint == f"tcp://127.0.0.1:{spout.port}"
    assert [e["endpoint"] for e in svc.table.status(T, P)["receivers"]] == [inflow.endpoint]
    inflow.stop()
    spout.close()
    worker_registry.close()
    fake.close()


def test_the_manager_guards_its_registry_and_creates_keys_at_first_start(tmp_path):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "data"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "security.cluster_secret_file": "",
            "metrics.sample_interval": 0,
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    try:
        assert (tmp_path / "data" / "security" / "curve" / "cluster.key_secret").exists()
        assert m.links.curve is None  # CURVE is off by default (embedded, loopback)
        assert m.registry.security.secret == m.auth.cluster_secret
        with pytest.raises(RegistryError, match="cluster secret"):
            RegistryClient(m.registry_url, security=curve.OFF).request("status", tenant=T, plan=P)
        assert member_of(m).request("status", tenant=T, plan=P)["ok"]
    finally:
        m.stop()


def member_of(manager):
    return RegistryClient(
        manager.registry_url, security=curve.LinkSecurity(secret=manager.auth.cluster_secret)
    )


def test_a_manager_with_curve_on_serves_its_registry_over_curve(tmp_path):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "data"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "security.curve": True,
            "metrics.sample_interval": 0,
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    try:
        keys = curve.load(tmp_path / "data" / "security" / "curve")
        assert m.links.curve == keys
        inside = RegistryClient(m.registry_url, security=curve.LinkSecurity(keys))
        assert inside.request("status", tenant=T, plan=P)["ok"]  # the key is enough
        outside = RegistryClient(
            m.registry_url,
            timeout=0.5,
            retries=0,
            security=curve.LinkSecurity(secret=m.auth.cluster_secret),
        )
        with pytest.raises(RegistryError, match="did not answer"):
            outside.request("status", tenant=T, plan=P)  # the secret alone is not
    finally:
        m.stop()


@pytest.mark.parametrize("curve_on", [False, True])
def test_a_registry_beyond_loopback_without_curve_is_warned_about(tmp_path, caplog, curve_on):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "data"),
            "registry.port": 0,
            "registry.bind_host": "*",
            "manager.advertised_host": "127.0.0.1",
            "security.curve": curve_on,
            "metrics.sample_interval": 0,
        },
        env={},
    )
    caplog.set_level(logging.WARNING, "manager")
    m = Manager(settings, launcher=FakeLauncher()).start()
    m.stop()
    warned = "security.curve is off" in caplog.text
    assert warned is not curve_on
