"""The widget's side of booking in the visitor's time zone, in headless Chromium set to
Europe/Paris against a real daphne: every ``POST /api/chat`` carries the browser's IANA zone as
``metadata.timezone`` beside the page's metadata, and a suggested ``reply`` action sends its
``message`` with its own ``metadata`` (merged with the zone), as the visitor's bubble shows it.

The slot actions are taken both as the service sends them, ``{"type": "reply", "label",
"message": "<label> works for me", "metadata": {"slot"}}``, and in the older shape the widget
still handles, ``{"type": "reply", "label", "message": "Book <slot>"}`` (docs/widget.md): a route
relays the live server's answer, and gives its slot actions that shape for the second case. The
service books both, and the page hears of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser import HostSite, browser, screenshot
from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne and Chromium

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "EMAIL_URL": None}
ZONE = "Europe/Paris"

ALLOW = """
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins
t = Tenant.objects.get(public_id={public_id!r})
tenant_set_allowed_origins(tenant=t, origins=[*t.allowed_origins, {origin!r}])
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    manage("migrate", "--noinput", env=env)
    with daphne(env) as base:
        manage("demo_tenant", "--base-url", base, env=env)
        public_id = json.loads((Path(env["VAR_DIR"]) / "demo-tenant.json").read_text())[
            "tenant"]["publicId"]
        site = HostSite(base, public_id)
        manage("shell", "-c", ALLOW.format(public_id=public_id, origin=site.origin), env=env)
        with browser() as chromium:
            yield {"base": base, "site": site, "browser": chromium}
        site.close()


def older_shape(action: dict) -> dict:
    """A slot action as services before the booking contract sent it (the slot in the text)."""
    slot = (action.get("metadata") or {}).get("slot")
    return {"type": "reply", "label": action["label"], "message": f"Book {slot}"} if slot else action


def reshape(stream: str, received: list[dict], older: bool) -> str:
    """The Server-Sent Events of a chat reply, with the actions of ``message_end`` noted (and
    given the older shape when ``older``)."""
    frames = []
    for frame in stream.split("\n\n"):
        if frame.startswith("event: message_end\ndata: "):
            data = json.loads(frame.split("data: ", 1)[1])
            if older:
                data["suggestedActions"] = [older_shape(a) for a in data["suggestedActions"]]
            received[:] = data["suggestedActions"]
            frame = "event: message_end\ndata: " + json.dumps(data)
        frames.append(frame)
    return "\n\n".join(frames)


def wait_idle(page) -> None:
    page.wait_for_function("() => document.querySelector('[data-service-widget]')"
                           ".shadowRoot.querySelector('.log').getAttribute('aria-busy') === 'false'",
                           timeout=15000)


@pytest.mark.parametrize("older", [False, True], ids=["as-served", "older-shape"])
def test_messages_carry_the_time_zone_and_an_actions_metadata(stack, older):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 800},
                                           timezone_id=ZONE)
    page = context.new_page()
    sent: list[dict] = []
    received: list[dict] = []

    def relay(route):
        response = route.fetch()
        route.fulfill(response=response, body=reshape(response.text(), received, older))

    page.on("request", lambda r: r.method == "POST" and "/api/chat?" in r.url
            and sent.append(r.post_data_json))
    page.route("**/api/chat?*", relay)
    try:
        url = stack["site"].origin + "/"
        page.goto(url)
        page.wait_for_function("() => document.querySelector('[data-service-widget]')")
        page.locator("button.launcher").click()
        for text in ("Hi, I'm Ann, CEO at Hooli. ann@hooli.com", "Can we book a demo?"):
            page.locator("#sw-input").fill(text)
            page.locator("#sw-input").press("Enter")
            wait_idle(page)
        assert [b["message"] for b in sent] == ["Hi, I'm Ann, CEO at Hooli. ann@hooli.com",
                                               "Can we book a demo?"]
        for body in sent:  # the zone and the widget's language join the page's metadata
            assert body["metadata"] == {"landingPage": url, "referrer": "", "timezone": ZONE,
                                        "widgetLanguage": "en"}

        slot = next(a for a in received if a.get("type") == "reply")
        button = page.locator(".actions button").first
        assert button.inner_text() == slot["label"]
        button.click()
        wait_idle(page)  # the click sent it (the bubble is there) and the reply came
        assert page.locator(".msg.user").count() == 3
        assert sent[-1]["message"] == slot["message"]
        assert sent[-1]["metadata"] == {"landingPage": url, "referrer": "",
                                        **slot.get("metadata", {}), "timezone": ZONE,
                                        "widgetLanguage": "en"}
        if older:
            assert slot["message"].startswith("Book ") and "slot" not in sent[-1]["metadata"]
        else:
            assert sent[-1]["metadata"]["slot"] == slot["metadata"]["slot"]
            assert slot["message"] == f"{slot['label']} works for me"
        assert page.locator(".msg.user > div").last.inner_text() == slot["message"]
        # The service booked it, in the visitor's zone.
        page.wait_for_function("() => window.__events.some((e) => e.type === 'service:meeting.booked')")
        assert "(Paris)" in page.locator(".msg.bot > div").last.inner_text()
        if not older:
            screenshot(page, "widget-slot-reply.png")
    finally:
        context.close()
