"""The satisfaction rating in Chromium against a real daphne (docs/widget.md, "Rating"; issue 29),
at desktop and phone sizes: a visitor chats on a customer's page; a rep closes the conversation
on the dashboard; the visitor's open widget shows the one question at once (through its live
stream), in the visitor's language; one tap stores it, an optional comment follows; the rep
sees both on the conversation's page, and the analytics page counts it beside the handoff rate.
Screenshots with ``SCREENSHOTS=1``."""

from __future__ import annotations

import re

import pytest

from tests.browser import customer_site, screenshot, sign_in, watch_csp
from widget.strings import STRINGS

pytestmark = pytest.mark.live  # daphne and Chromium

PASSWORD = "widget-rating-password"
SIZES = {
    "desktop": ({"viewport": {"width": 1280, "height": 800}, "locale": "en-US"}, "en"),
    "phone": ({"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
               "is_mobile": True, "has_touch": True, "locale": "fr-FR"}, "fr"),
}
SETUP = """
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, user_create
from widget.services import widget_settings_update
t = Tenant.objects.get(pk={tenant!r})
tenant_set_allowed_origins(tenant=t, origins=[{origin!r}])
user_create(tenant=t, email="mia@acme.test", first_name="Mia", role="manager",
            password={password!r})
widget_settings_update(tenant=t, title="Chat with us", greeting="Hi! How can we help you today?",
                       position="bottom-right", primary_color="#2563eb", text_color="#ffffff",
                       rating_enabled=True)
"""
SHADOW = "document.querySelector('[data-service-widget]').shadowRoot"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with customer_site(tmp_path_factory.mktemp("var"), SETUP, password=PASSWORD) as stack:
        context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
        violations = watch_csp(context)
        rep = context.new_page()
        sign_in(rep, stack["base"], "mia@acme.test", PASSWORD)
        yield {**stack, "rep": rep, "violations": violations, "rated": []}
        context.close()


@pytest.mark.parametrize("size", list(SIZES))
def test_rated_after_the_rep_closes_shown_and_counted(stack, size):
    device, language = SIZES[size]
    words = STRINGS[language]
    suffix = "-phone" if size == "phone" else ""
    context = stack["browser"].new_context(**device)
    violations = watch_csp(context)
    try:
        page = context.new_page()
        page.goto(stack["site"].origin + "/")
        page.wait_for_function("() => window.ServiceWidget && "
                               "document.querySelector('[data-service-widget]')")
        page.locator("button.launcher").click()
        page.locator("#sw-input").fill("Hello" if language == "en" else "Bonjour")
        page.locator("#sw-input").press("Enter")
        page.wait_for_function(f"() => {SHADOW}.querySelectorAll('.msg.bot').length >= 2 && "
                               f"{SHADOW}.querySelector('.log').getAttribute('aria-busy') === 'false'")
        session = page.evaluate("() => ServiceWidget.sessionId")

        # The rep closes it on the dashboard.
        rep = stack["rep"]
        rep.goto(f"{stack['base']}/dashboard/conversations/{session}/")
        rep.get_by_role("button", name="Close", exact=True).click()
        rep.wait_for_load_state()

        # The visitor's widget asks at once, in their language.
        question = page.get_by_role("group", name=words["rate"])
        question.wait_for(timeout=15000)
        assert page.get_by_text(words["ended"]).is_visible()
        good = page.get_by_role("button", name=words["good"], exact=True)
        bad = page.get_by_role("button", name=words["bad"], exact=True)
        assert good.is_visible() and bad.is_visible()
        box = good.bounding_box()
        assert box["width"] >= 40 and box["height"] >= 40  # a thumb's target
        screenshot(page, f"widget-rating{suffix}.png")
        good.click()
        page.get_by_text(words["thanks"]).wait_for()
        assert good.get_attribute("aria-pressed") == "true"
        comment = page.get_by_placeholder(words["note"])
        assert comment.is_visible()
        words_of_visitor = "Quick and clear, thanks!" if language == "en" else "Rapide et clair, merci !"
        comment.fill(words_of_visitor)
        screenshot(page, f"widget-rating-comment{suffix}.png")
        page.get_by_role("button", name=words["noteSend"], exact=True).click()
        comment.wait_for(state="detached")
        stack["rated"].append(session)

        # The rep sees it on the conversation's page.
        rep.goto(f"{stack['base']}/dashboard/conversations/{session}/")
        rating = rep.locator("#rating")
        assert "Good" in rating.inner_text() and words_of_visitor in rating.inner_text()
        if size == "desktop":
            rep.locator("#rating").scroll_into_view_if_needed()
            screenshot(rep, "dashboard-conversation-rating.png")
        # Analytics counts it beside the handoff rate.
        rep.goto(f"{stack['base']}/dashboard/analytics/")
        tile = rep.locator("#stat-satisfaction").inner_text()
        n = len(stack["rated"])
        assert re.search(rf"{n} good of {n} rating", tile) and "100%" in tile, tile
        assert rep.locator("#stat-handoff").is_visible()
        if size == "phone":
            rep.locator("#stat-satisfaction").scroll_into_view_if_needed()
            screenshot(rep, "dashboard-analytics-satisfaction.png")
        assert violations == [] and stack["violations"] == []
    finally:
        context.close()
