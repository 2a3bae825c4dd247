"""`@sink(type='email')`: one e-mail per event over SMTP (smtplib), to the relay the
connection names (`smtp://[user:password@]host:port`, or `smtps://` for TLS from the start;
`starttls='true'` upgrades a plain connection). `to` (comma-separated), `from` and `subject`
(`{stream}` is replaced by the stream id); the body is the event as JSON. A batch is written
over one SMTP session."""

import smtplib
from email.message import EmailMessage

from connectors.connections import parts, shown
from connectors.mapping import sink_payloads
from connectors.options import flag, number, required
from publishers.base import Sink
from publishers.exceptions import SinkWriteError


class EmailSink(Sink):
    """`@sink(type='email', connection='mail', to='ops@example.com', subject='{stream}')`."""

    type = "email"

    def __init__(self, stream, options, url):
        super().__init__(stream, options)
        where = f"@sink(type='email') on stream {stream}"
        self.url = url
        self.scheme, hosts, self.user, self.password, _ = parts(url)
        self.host, self.port = hosts[0]
        self.port = self.port or (465 if self.scheme == "smtps" else 25)
        self.to = [a.strip() for a in required(self.options, "to", where).split(",") if a.strip()]
        self.sender = str(self.options.get("from") or "cep@localhost")
        self.subject = str(self.options.get("subject") or "{stream}")
        self.starttls = flag(self.options, "starttls", False, where)
        self.timeout = number(self.options, "timeout", 30.0, where)

    def _session(self):
        kind = smtplib.SMTP_SSL if self.scheme == "smtps" else smtplib.SMTP
        session = kind(self.host, self.port, timeout=self.timeout)
        if self.starttls:
            session.starttls()
        if self.user:
            session.login(self.user, self.password or "")
        return session

    def write_batch(self, events):
        try:
            with self._session() as session:
                for body in sink_payloads(self, events):
                    msg = EmailMessage()
                    msg["From"], msg["To"] = self.sender, ", ".join(self.to)
                    msg["Subject"] = self.subject.replace("{stream}", self.stream)
                    msg.set_content(body.decode("utf-8", "replace"))
                    session.send_message(msg)
                    self.written += 1
        except (smtplib.SMTPException, OSError) as exc:
            raise SinkWriteError(
                f"email sink {shown(self.url)}: {type(exc).__name__}: {exc}"
            ) from None

    def describe(self):
        return {**super().describe(), "url": shown(self.url), "to": self.to}
