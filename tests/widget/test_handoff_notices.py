"""What the visitor is told when a person takes the chat (docs/conversations.md, "Handoff
notices"), against a real daphne process: at a handoff, who will reply and roughly when (the
tenant's business hours); "has joined" only once that person takes the conversation over or
first replies; and, being derived from the stored conversation, the same notice after a reload.
Through the widget's live stream (``GET /api/chat/stream``), then in a real browser."""

from __future__ import annotations

import contextlib
import json
import queue
import re
import threading

import httpx
import pytest

from tests.browser import HostSite, browser, screenshot
from tests.live import daphne, manage

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0"}
PASSWORD = "correct-horse-battery"
HOURS = "Mon–Fri 9–17 CET"
STAFF = {"Dana": "dana@acme.test", "Rita": "rita@acme.test"}

pytestmark = pytest.mark.live  # daphne and Chromium

SETUP = """
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, tenant_set_facts, user_create
acme = Tenant.objects.get(pk={acme!r})
tenant_set_allowed_origins(tenant=acme, origins=[{origin!r}])
tenant_set_facts(tenant=acme, business_hours={hours!r})
user_create(tenant=acme, email="dana@acme.test", first_name="Dana", last_name="Diaz", role="rep",
            password={password!r})
user_create(tenant=acme, email="rita@acme.test", first_name="Rita", last_name="Rep",
            role="manager", password={password!r})
# Both are there whenever the test runs: online, working every hour (docs/dashboard.md).
acme.users.update(status="online", working_hours={{"days": list(range(7)), "start_hour": 0,
                                                    "end_hour": 24}})
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    # Beta has no business hours and no staff yet.
    beta = json.loads(manage("create_tenant", "Beta", "--json", env=env))
    with daphne(env) as base:
        site = HostSite(base, acme["tenant"]["publicId"])
        manage("shell", "-c", SETUP.format(acme=acme["tenant"]["id"], origin=site.origin,
                                            hours=HOURS, password=PASSWORD), env=env)
        with browser() as chromium:
            yield {"base": base, "site": site, "acme": acme["tenant"]["publicId"],
                   "beta": beta["tenant"]["publicId"], "browser": chromium}
        site.close()


# --- the live stream, over HTTP --------------------------------------------------------------


def ask_for_a_person(stack, visitor, *, tenant="acme", message="I want to talk to a person"):
    r = httpx.post(f"{stack['base']}/api/chat?tenant={stack[tenant]}", timeout=30,
                   json={"message": message, "visitorId": visitor})
    assert r.status_code == 200 and r.json()["handoff"], r.text
    return r.json()["sessionId"]


def stream_url(stack, session, visitor, tenant="acme"):
    return (f"{stack['base']}/api/chat/stream?tenant={stack[tenant]}&sessionId={session}"
            f"&visitorId={visitor}")


def snapshot(stack, session, visitor, tenant="acme"):
    """The ``session`` event a (re)loaded widget gets first."""
    with httpx.stream("GET", stream_url(stack, session, visitor, tenant), timeout=15) as r:
        assert r.status_code == 200
        name = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name == "session":
                return json.loads(line[6:])
    raise AssertionError("no session event")


class Stream:
    """The visitor's open stream: its events, in order, read by a thread."""

    def __init__(self, url):
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(url,), daemon=True).start()
        assert self.next()[0] == "session"

    def _read(self, url):
        # Open until the server stops at the end of the module.
        with (contextlib.suppress(httpx.HTTPError),
              httpx.stream("GET", url, timeout=httpx.Timeout(30, read=60)) as r):
            name = None
            for line in r.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    self.events.put((name, json.loads(line[6:])))

    def next(self):
        return self.events.get(timeout=15)


class Staff:
    """A person of Acme signed in to the dashboard (a real session, CSRF and all)."""

    def __init__(self, stack, name):
        self.base = stack["base"]
        self.client = httpx.Client(follow_redirects=False, timeout=30)
        page = self.client.get(self.base + "/dashboard/login/")
        r = self.client.post(self.base + "/dashboard/login/", data={
            "csrfmiddlewaretoken": _csrf(page.text), "username": STAFF[name],
            "password": PASSWORD})
        assert r.status_code == 302, r.text[:300]

    def post(self, session, action, **data):
        page = self.client.get(f"{self.base}/dashboard/conversations/{session}/")
        r = self.client.post(f"{self.base}/dashboard/conversations/{session}/{action}/",
                             data={"csrfmiddlewaretoken": _csrf(page.text), **data})
        assert r.status_code == 302, r.text[:300]

    def close(self):
        self.client.close()


def _csrf(html):
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def _first(agent):
    return agent["name"].split()[0]


def _other(name):
    return next(n for n in STAFF if n != name)


def will_reply(name):
    return f"{name} from our team will reply here, usually within business hours ({HOURS})."


def joined(name):
    return f"{name} from our team has joined the conversation."


def test_the_assigned_person_will_reply_and_joins_with_their_first_reply(stack):
    session = ask_for_a_person(stack, "v-reply")
    first = snapshot(stack, session, "v-reply")
    name = _first(first["agent"])
    assert first["status"] == "handed_off" and first["agent"]["joined"] is False
    assert first["notice"] == will_reply(name)  # not "has joined": nobody has yet
    stream = Stream(stream_url(stack, session, "v-reply"))
    staff = Staff(stack, name)
    try:
        staff.post(session, "reply", content="Hello, how can I help?")
        # Told they joined, then their message.
        event, status = stream.next()
        assert (event, status["notice"], status["agent"]["joined"]) == ("status", joined(name),
                                                                         True)
        event, message = stream.next()
        assert event == "message" and message["content"] == "Hello, how can I help?"
        staff.post(session, "reply", content="Still here.")
        assert stream.next()[0] == "message"  # a second reply: no second "joined"
    finally:
        staff.close()
    assert snapshot(stack, session, "v-reply")["notice"] == joined(name)  # after a reload too


def test_taking_over_joins_at_once_and_handing_back_ends_the_notice(stack):
    session = ask_for_a_person(stack, "v-take")
    assigned = _first(snapshot(stack, session, "v-take")["agent"])
    taker = _other(assigned)
    stream = Stream(stream_url(stack, session, "v-take"))
    staff = Staff(stack, taker)
    try:
        staff.post(session, "take-over")
        event, status = stream.next()
        assert event == "status" and status["agent"]["name"].startswith(taker)
        assert status["notice"] == joined(taker)
        assert snapshot(stack, session, "v-take")["notice"] == joined(taker)
        staff.post(session, "hand-back")
        event, status = stream.next()
        assert (event, status["status"], status["agent"], status["notice"]) == (
            "status", "active", None, None)
    finally:
        staff.close()


def test_reassigning_to_someone_else_says_who_will_reply(stack):
    session = ask_for_a_person(stack, "v-assign")
    assigned = _first(snapshot(stack, session, "v-assign")["agent"])
    other = _other(assigned)
    manager = Staff(stack, "Rita")
    try:
        users = manager.client.get(f"{stack['base']}/dashboard/conversations/{session}/").text
        pk = re.search(rf'<option value="([^"]+)"[^>]*>{other} ', users).group(1)
        manager.post(session, "assign", user=pk)
    finally:
        manager.close()
    shown = snapshot(stack, session, "v-assign")
    assert shown["agent"]["joined"] is False and shown["notice"] == will_reply(other)


def test_without_business_hours_or_staff_in_the_visitors_language(stack):
    session = ask_for_a_person(stack, "v-fr", tenant="beta",
                               message="Bonjour, je voudrais parler à un humain s'il vous plaît")
    shown = snapshot(stack, session, "v-fr", tenant="beta")
    assert shown["agent"] is None
    # Nobody has it and nobody can: no time is promised (docs/dashboard.md).
    assert shown["notice"] == "Un membre de notre équipe vous répondra ici."


# --- in the browser --------------------------------------------------------------------------


def notices(page):
    return page.locator(".notice").all_inner_texts()


def reload(page):
    page.reload()
    page.wait_for_function("() => window.ServiceWidget && document.querySelector("
                           "'[data-service-widget]')")
    page.locator("button.launcher").click()
    page.locator(".notice").first.wait_for(timeout=10000)


def test_the_widget_says_who_will_reply_then_who_joined_across_reloads(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(stack["site"].origin + "/")
        page.wait_for_function("() => window.ServiceWidget && document.querySelector("
                               "'[data-service-widget]')")
        page.locator("button.launcher").click()
        page.locator("#sw-input").fill("Hi, I'm Carl, carl@initech.test. Can I talk to a person?")
        page.locator("#sw-input").press("Enter")
        page.locator(".notice").first.wait_for(timeout=15000)
        text = notices(page)
        assert len(text) == 1 and "will reply here, usually within business hours" in text[0]
        assert not any("joined" in t for t in text)
        assigned = text[0].split()[0]
        screenshot(page, "widget-handoff-will-reply.png")

        reload(page)
        assert notices(page) == text  # derived from the stored conversation

        session = page.evaluate("ServiceWidget.sessionId")
        staff = Staff(stack, _other(assigned))
        try:
            staff.post(session, "take-over")
        finally:
            staff.close()
        page.locator(".notice", has_text="has joined").wait_for(timeout=10000)
        assert notices(page) == [*text, joined(_other(assigned))]
        screenshot(page, "widget-handoff-joined.png")

        reload(page)
        page.locator(".notice", has_text="has joined").wait_for(timeout=10000)
        assert notices(page) == [joined(_other(assigned))]  # the state now, once

        # The person has it: the visitor's message gets no reply bubble, not even an empty one
        # (docs/conversations.md, "While a person has the conversation").
        bots = page.locator(".msg.bot").count()
        page.locator("#sw-input").fill("Thanks, I'll wait here")
        page.locator("#sw-input").press("Enter")
        page.locator(".msg.user", has_text="Thanks, I'll wait here").wait_for(timeout=10000)
        page.locator('[aria-busy="false"]').wait_for(timeout=15000)  # the answer has come
        assert page.locator(".msg.bot").count() == bots
    finally:
        context.close()
