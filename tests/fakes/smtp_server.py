"""A real SMTP server for the email tests: aiosmtpd on 127.0.0.1, in a thread of this process.
It keeps what it receives, parsed, and can be told to refuse every message (5xx)."""

from __future__ import annotations

import email
import email.policy
import threading
import time
from dataclasses import dataclass
from email.message import EmailMessage

from aiosmtpd.controller import Controller

from tests.live import free_port


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage

    @property
    def to(self) -> str:
        return self.rcpt_tos[0]

    def part(self, content_type: str):
        for part in self.message.walk():
            if part.get_content_type() == content_type:
                return part
        return None

    def text(self) -> str:
        return self.part("text/plain").get_content()

    def html(self) -> str:
        return self.part("text/html").get_content()

    def ics(self) -> bytes:
        return self.part("text/calendar").get_payload(decode=True)


class _Handler:
    def __init__(self, server: SmtpServer):
        self.server = server

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's API
        if self.server.refuse:
            self.server.refused += 1
            return "554 5.7.1 Message refused by the test server"
        message = email.message_from_bytes(envelope.original_content or envelope.content,
                                           policy=email.policy.default)
        with self.server.lock:
            self.server.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos),
                                                 message))
        return "250 Message accepted for delivery"


class SmtpServer:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.refuse = False
        self.refused = 0
        self.lock = threading.Lock()
        self.port = free_port()
        self.controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def reset(self) -> None:
        with self.lock:
            self.received.clear()
        self.refuse = False
        self.refused = 0

    def to(self, address: str) -> list[Received]:
        return [r for r in self.received if r.to == address]

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.received)} of {count} emails arrived")
            time.sleep(0.02)
        return list(self.received)

    def close(self) -> None:
        self.controller.stop()
