"""The inbox's keyboard shortcuts in Chromium at desktop size against a real daphne
(docs/dashboard.md, "Keyboard shortcuts"): j/k through the list and, from a conversation, to
the next and previous one of that list; a to take the conversation (assigned to me, in the
database), r to the reply box, e to close it (closed, in the database), / to the search, ? for
the list of them. None fires while the focus is in a field or with a modifier key. Under the
Content-Security-Policy, with no violation. Screenshot with ``SCREENSHOTS=1``."""

from __future__ import annotations

import json

import pytest

from tests.browser import browser, screenshot, sign_in, watch_csp
from tests.live import daphne, manage

from .test_browser import EMBEDDED

pytestmark = pytest.mark.live  # daphne and Chromium

PASSWORD = "shortcuts-browser-password"

SETUP = """
import json
from datetime import timedelta
from django.db import transaction
from django.utils import timezone
from conversations.services.lifecycle import conversation_start
from conversations.services.messages import append_message
from tenants.models import Tenant
from tenants.services import user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
made = []
# Newest first in the list: Olga, then Ben, then Kim.
for age, (visitor, subject) in enumerate([("v-olga", "Enterprise pricing"),
                                          ("v-ben", "Migrating from HubSpot"),
                                          ("v-kim", "API limits")]):
    at = timezone.now() - timedelta(minutes=10 * (age + 1))
    with transaction.atomic():
        c = conversation_start(tenant=tenant, livemode=True, visitor_id=visitor,
                               channel="web_chat", metadata={{}}, language="en", now=at)
        c.subject = subject
        append_message(c, role="user", content=subject + "?", now=at)
        c.save()
    made.append(str(c.pk))
print(json.dumps(made))
"""
STATE = """
import json
from conversations.models import Conversation
c = Conversation.objects.select_related("assigned_to").get(pk={pk!r})
print(json.dumps([c.status, c.assigned_to.email if c.assigned_to else None]))
"""


def last_json(output: str):
    return json.loads(output.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("shortcuts"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    with daphne(env) as base:
        ids = last_json(manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"],
                                                           password=PASSWORD), env=env))
        with browser() as chromium:
            yield {"base": base, "browser": chromium, "env": env, "ids": ids}


def state(stack, pk):
    return last_json(manage("shell", "-c", STATE.format(pk=pk), env=stack["env"]))


def selected(page):
    return page.evaluate("Array.from(document.querySelectorAll('[data-conversation-url]'))"
                         ".findIndex(r => r.classList.contains('selected'))")


def test_each_shortcut_does_what_the_list_says(stack):
    olga, ben, kim = stack["ids"]
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    violations = watch_csp(context)
    page = context.new_page()
    sign_in(page, stack["base"], "mia@acme.test", PASSWORD)
    page.goto(stack["base"] + "/dashboard/conversations/?view=all")

    # ? shows the list of shortcuts; ? again (or Escape) hides it.
    page.keyboard.press("?")
    dialog = page.locator("#shortcuts")
    dialog.wait_for(state="visible")
    assert "Assign to me" in dialog.inner_text() and "Close the conversation" in dialog.inner_text()
    screenshot(page, "inbox-shortcuts.png")
    page.keyboard.press("j")  # the dialog has the keyboard: nothing moves behind it
    assert selected(page) == -1
    page.keyboard.press("Escape")
    dialog.wait_for(state="hidden")

    # j and k move the selection; Ctrl+J and a J typed in the search box do not.
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert selected(page) == 1
    page.keyboard.press("k")
    assert selected(page) == 0
    page.keyboard.press("Control+j")
    assert selected(page) == 0
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("jj")
    assert selected(page) == 0 and page.input_value("#q") == "jj"
    page.fill("#q", "")
    page.evaluate("document.activeElement.blur()")

    # Enter opens the selected one; j and k then go through the same list.
    page.keyboard.press("j")
    assert selected(page) == 1
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/dashboard/conversations/{ben}/")
    page.keyboard.press("j")
    page.wait_for_url(f"**/dashboard/conversations/{kim}/")
    page.keyboard.press("k")
    page.wait_for_url(f"**/dashboard/conversations/{ben}/")
    page.keyboard.press("k")
    page.wait_for_url(f"**/dashboard/conversations/{olga}/")

    # a: assigned to me (taken over), in the database.
    assert state(stack, olga) == ["active", None]
    page.keyboard.press("a")
    page.locator("#reply-form").wait_for()
    assert state(stack, olga) == ["handed_off", "mia@acme.test"]
    # r: the reply box; an "e" typed in it is text, not a close.
    page.keyboard.press("r")
    assert page.evaluate("document.activeElement.closest('#reply-form') !== null")
    page.keyboard.type("See you")
    assert state(stack, olga)[0] == "handed_off"
    page.evaluate("document.activeElement.blur()")
    # Alt+E is the browser's, not a close; e closes it, in the database.
    page.keyboard.press("Alt+e")
    assert state(stack, olga)[0] == "handed_off"
    page.keyboard.press("e")
    page.get_by_text("This conversation has ended.").wait_for()
    assert state(stack, olga)[0] == "closed"

    # / from a conversation: the list, its search box ready.
    page.keyboard.press("/")
    page.wait_for_url("**/dashboard/conversations/#search")
    assert page.evaluate("document.activeElement.id") == "q"
    assert violations == []
    context.close()


def test_the_proactive_messages_page_says_why_a_pattern_is_refused(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    violations = watch_csp(context)
    page = context.new_page()
    sign_in(page, stack["base"], "mia@acme.test", PASSWORD)
    page.goto(stack["base"] + "/dashboard/settings/")
    page.get_by_role("link", name="Proactive messages").click()
    page.fill("#id_message", "Questions about **pricing**? I can help you pick a plan.")
    page.fill("#id_url_pattern", "/pricing")
    page.fill("#id_priority", "10")
    page.get_by_role("button", name="Add proactive message").click()
    page.get_by_text("Proactive message saved.").wait_for()
    page.fill("#id_message", "Stuck on setup? Ask me.")
    page.fill("#id_url_pattern", "docs setup")
    page.fill("#id_seconds_on_page", "20")
    page.get_by_role("button", name="Add proactive message").click()
    error = page.locator("#proactive-form .errorlist")
    error.first.wait_for()
    assert "A path starting with /" in error.first.inner_text()
    assert page.input_value("#id_message") == "Stuck on setup? Ask me."  # what was typed stays
    assert page.evaluate("document.activeElement.id") == "id_url_pattern"
    rows = page.locator("#proactive-list tbody tr")
    assert rows.count() == 1 and "/pricing" in rows.first.inner_text()
    screenshot(page, "dashboard-proactive.png", full_page=True)
    assert violations == []
    context.close()
