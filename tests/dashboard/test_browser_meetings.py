"""A booked meeting on the lead's page in a real browser (headless Chromium) against a real
daphne process on the embedded default: the visitor books through /api/v1/chat, the page shows
the meeting, its host and the emails sent (written as .eml files, as ``make run`` does), and the
manager cancels it from the page; the cancellation goes out too. Screenshot with
``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import json
import time
from email import message_from_bytes, policy

import httpx
import pytest
from icalendar import Calendar

from tests.browser import browser, screenshot
from tests.live import daphne, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne and Chromium

# Emails go where the embedded default sends them: .eml files under VAR_DIR/mail.
ENV = {**EMBEDDED, "EMAIL_URL": None, "EMAIL_HOST": None, "EMAIL_BACKEND": None}

SETUP = """
from tenants.models import Tenant
from tenants.services import user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
"""


def _chat(base: str, key: str, message: str, session: str | None = None) -> dict:
    body = {"message": message, "visitorId": "sam", **({"sessionId": session} if session else {})}
    r = httpx.post(f"{base}/api/v1/chat", json=body, timeout=30,
                   headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return r.json()


def _emails(mail_dir, count: int, timeout: float = 15) -> list:
    deadline = time.monotonic() + timeout
    while len(files := sorted(mail_dir.glob("*.eml"))) < count:
        assert time.monotonic() < deadline, f"{len(files)} of {count} emails written"
        time.sleep(0.1)
    return [message_from_bytes(f.read_bytes(), policy=policy.default) for f in files]


@pytest.fixture(scope="module")
def meeting_stack(tmp_path_factory):
    var = tmp_path_factory.mktemp("meetings")
    env = {**ENV, "VAR_DIR": str(var)}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD), env=env)
    with browser() as chromium, daphne(env) as base:
        yield {"base": base, "browser": chromium, "key": acme["keys"]["live"]["write"],
               "mail": var / "mail"}


def test_a_booked_meeting_and_its_emails_on_the_lead_page_then_cancelled(meeting_stack):
    base, key, mail = meeting_stack["base"], meeting_stack["key"], meeting_stack["mail"]
    sid = _chat(base, key, "I'm Sam Lee, CTO at Umbrella, sam@umbrella.io")["sessionId"]
    offered = _chat(base, key, "Can we book a demo?", sid)
    slot = next(a for a in offered["suggestedActions"] if a["type"] == "reply")
    booked = _chat(base, key, f"Book {slot['metadata']['slot']}", sid)
    # The embedded default writes emails to var/mail/: none reaches the visitor, none promised.
    assert "confirmation by email" not in booked["content"]
    invitation, host = sorted(_emails(mail, 2), key=lambda m: m["To"] != "sam@umbrella.io")
    assert invitation["To"] == "sam@umbrella.io" and host["To"] == "mia@acme.test"
    ics = next(p for p in invitation.walk() if p.get_content_type() == "text/calendar")
    uid = str(Calendar.from_ical(ics.get_payload(decode=True)).walk("VEVENT")[0]["UID"])

    context = meeting_stack["browser"].new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
    page.get_by_role("link", name="Leads").click()
    page.get_by_role("link", name="Sam Lee").first.click()

    meeting = page.locator(f"#meeting-{uid}")
    assert "Scheduled" in meeting.inner_text() and "with Mia Manager" in meeting.inner_text()
    emails = page.locator("#emails tr")
    assert emails.count() == 2
    assert "Meeting confirmation (visitor)" in page.locator("#emails").inner_text()
    assert page.locator("#emails").inner_text().count("Sent") == 2
    screenshot(page, "dashboard-meeting.png", full_page=True)

    page.once("dialog", lambda dialog: dialog.accept())
    meeting.get_by_role("button", name="Cancel meeting").click()
    page.wait_for_load_state()
    assert "Meeting cancelled" in page.locator(".messages").inner_text()
    assert "Cancelled by the staff" in page.locator(f"#meeting-{uid}").inner_text()
    assert page.locator(f"#meeting-{uid}").get_by_role("button", name="Cancel meeting").count() == 0
    assert "Meeting cancelled (visitor)" in page.locator("#emails").inner_text()

    cancellation = next(m for m in _emails(mail, 3) if "cancelled" in m["Subject"])
    ics = next(p for p in cancellation.walk() if p.get_content_type() == "text/calendar")
    calendar = Calendar.from_ical(ics.get_payload(decode=True))
    assert str(calendar["METHOD"]) == "CANCEL"
    assert str(calendar.walk("VEVENT")[0]["UID"]) == uid
    context.close()
