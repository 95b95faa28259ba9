"""The widget follows a deploy (docs/deploy.md, "What a web process does on SIGTERM"): in
Chromium, a visitor's open widget is handed off to a person; the web process is stopped with
SIGTERM, which ends the widget's live stream with a ``reconnect`` event; a new process starts
on the same address; the widget's stream comes back by itself, and the person's reply, sent
through the new process, appears in the widget with nothing reloaded."""

from __future__ import annotations

import json
import re
import signal
import time

import httpx
import pytest

from tests.browser import EMBEDDED, HostSite, browser
from tests.live import daphne, free_port, manage

pytestmark = pytest.mark.live  # two daphne processes, one after the other, and Chromium

PASSWORD = "correct-horse-battery"
SETUP = """
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, user_create
tenant = Tenant.objects.get(pk={tenant!r})
tenant_set_allowed_origins(tenant=tenant, origins=[{origin!r}])
rita = user_create(tenant=tenant, email="rita@acme.test", first_name="Rita", last_name="Rep",
                   role="manager", password={password!r})
rita.status, rita.working_hours = "online", {{"days": list(range(7)), "start_hour": 0,
                                              "end_hour": 24}}
rita.save()
"""


def _reply_as_rita(base: str, session_id: str, text: str) -> None:
    with httpx.Client(follow_redirects=False, timeout=60) as rep:
        page = rep.get(base + "/dashboard/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        r = rep.post(base + "/dashboard/login/", data={
            "csrfmiddlewaretoken": token, "username": "rita@acme.test", "password": PASSWORD})
        assert r.status_code == 302, r.text[:300]
        page = rep.get(f"{base}/dashboard/conversations/{session_id}/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        r = rep.post(f"{base}/dashboard/conversations/{session_id}/reply/",
                     data={"csrfmiddlewaretoken": token, "content": text})
        assert r.status_code == 302


def test_the_open_widget_reconnects_to_the_next_process_and_shows_what_it_sends(tmp_path):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path)}
    manage("migrate", "--noinput", env=env, timeout=600)
    created = json.loads(manage("create_tenant", "Acme", "--json", env=env, timeout=600))
    port = free_port()
    streams: list[tuple[str, int]] = []
    with daphne(env, port=port) as first:
        site = HostSite(first, created["tenant"]["publicId"])
        manage("shell", "-c", SETUP.format(tenant=created["tenant"]["id"], origin=site.origin,
                                            password=PASSWORD), env=env, timeout=600)
        with browser() as chromium:
            page = chromium.new_context().new_page()
            page.on("response", lambda r: "/api/chat/stream" in r.url
                    and streams.append((r.url, r.status)))
            page.goto(site.origin + "/")
            page.wait_for_function("() => window.ServiceWidget && "
                                   "document.querySelector('[data-service-widget]')")
            page.locator("button.launcher").click()
            page.locator("#sw-input").fill("Can I talk to a person please?")
            page.locator("#sw-input").press("Enter")
            page.locator(".notice").first.wait_for(timeout=30000)
            session_id = page.evaluate("ServiceWidget.sessionId")
            deadline = time.monotonic() + 15
            while not streams and time.monotonic() < deadline:
                page.wait_for_timeout(100)
            assert streams and streams[0][1] == 200

            first.process.send_signal(signal.SIGTERM)
            assert first.process.wait(timeout=30) == 0
            with daphne(env, port=port) as second:
                _reply_as_rita(second, session_id, "Rita here, on the new process.")
                page.locator(".msg.human", has_text="on the new process").wait_for(timeout=30000)
            assert len(streams) >= 2 and streams[-1][1] == 200
        site.close()
