"""Human takeover across processes: the visitor's stream is served by one daphne process and
the rep's reply by another, as behind a load balancer. It needs the Redis channel layer
(REDIS_URL) and a database both processes share (DATABASE_URL): on the embedded default the
in-memory layer works within one process only, which test_widget_browser.py covers."""

from __future__ import annotations

import json
import os
import queue
import re
import threading

import httpx
import pytest

from tests.live import daphne, manage, scratch_database

pytestmark = [
    pytest.mark.live,  # two daphne processes
    pytest.mark.skipif(
        not (os.environ.get("REDIS_URL") and os.environ.get("DATABASE_URL")),
        reason="needs REDIS_URL and DATABASE_URL: two processes share a channel layer only through Redis",
    ),
]

SETUP = """
from tenants.models import Tenant
from tenants.services import user_create
xena = user_create(tenant=Tenant.objects.get(pk={tenant!r}), email={email!r}, first_name="Xena",
                   role="manager", password="pw-for-the-live-test")
# Xena is there whenever the test runs: online, working every hour (docs/dashboard.md).
xena.status, xena.working_hours = "online", {{"days": list(range(7)), "start_hour": 0,
                                              "end_hour": 24}}
xena.save()
"""


def read_stream(url: str, out: queue.Queue, stop: threading.Event) -> None:
    with httpx.stream("GET", url, timeout=httpx.Timeout(30, read=30)) as r:
        out.put(("status", r.status_code))
        name = None
        for line in r.iter_lines():
            if stop.is_set():
                return
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                out.put((name, json.loads(line[6:])))


def sign_in(client: httpx.Client, base: str, email: str) -> None:
    page = client.get(base + "/dashboard/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    r = client.post(base + "/dashboard/login/", data={
        "csrfmiddlewaretoken": token, "username": email, "password": "pw-for-the-live-test"})
    assert r.status_code == 302, r.text[:300]


@pytest.fixture
def shared_database():
    with scratch_database(f"salesagent_takeover_{os.getpid()}") as url:
        yield url


def test_a_reply_from_one_process_reaches_a_stream_on_another(tmp_path, shared_database):
    # DEBUG: plain-HTTP cookies (Secure cookies would not travel over http://127.0.0.1).
    env = {"VAR_DIR": str(tmp_path), "V1_REQUIRE_HTTPS": "0", "DEBUG": "1",
           "DATABASE_URL": shared_database}
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Two Processes", "--json", env=env))
    email = f"xena+{os.getpid()}@two.test"
    manage("shell", "-c", SETUP.format(tenant=created["tenant"]["id"], email=email), env=env)
    public_id = created["tenant"]["publicId"]
    with daphne(env) as visitor_base, daphne(env) as rep_base:
        chat = httpx.post(f"{visitor_base}/api/chat?tenant={public_id}", timeout=30,
                          json={"message": "I want to talk to a human", "visitorId": "v2p"}).json()
        session = chat["sessionId"]
        assert chat["handoff"]
        events: queue.Queue = queue.Queue()
        stop = threading.Event()
        url = f"{visitor_base}/api/chat/stream?tenant={public_id}&sessionId={session}&visitorId=v2p"
        reader = threading.Thread(target=read_stream, args=(url, events, stop), daemon=True)
        reader.start()
        assert events.get(timeout=15) == ("status", 200)
        name, snapshot = events.get(timeout=15)
        assert name == "session" and snapshot["status"] == "handed_off"
        assert [m["role"] for m in snapshot["messages"]] == ["user", "assistant"]
        assert snapshot["notice"] == "Xena from our team will reply here shortly."

        with httpx.Client(follow_redirects=False, timeout=30) as rep:
            sign_in(rep, rep_base, email)
            page = rep.get(f"{rep_base}/dashboard/conversations/{session}/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
            r = rep.post(f"{rep_base}/dashboard/conversations/{session}/reply/",
                         data={"csrfmiddlewaretoken": token, "content": "Xena here, across processes."})
            assert r.status_code == 302
            name, status = events.get(timeout=30)  # her first reply: she joins with it
            assert name == "status" and status["notice"] == (
                "Xena from our team has joined the conversation.")
            name, message = events.get(timeout=30)
            assert name == "message" and message["content"] == "Xena here, across processes."
            assert message["author"] == {"name": "Xena"}
            rep.post(f"{rep_base}/dashboard/conversations/{session}/close/",
                     data={"csrfmiddlewaretoken": token})
            name, status = events.get(timeout=30)
            assert name == "status" and status["status"] == "closed"
        stop.set()
        reader.join(timeout=10)
        assert not reader.is_alive(), "the stream did not end with the conversation"
