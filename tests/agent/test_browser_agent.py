"""The builtin agent's wording as a visitor reads it in the widget (headless Chromium, a real
daphne): an answer from the knowledge base is a sentence or two naming its document, without
Markdown quote markers; asking the price again gets no sentence already said; the email address
is asked for once. The wording itself: tests/knowledge/test_chat.py, tests/conversations/
test_chat_v1.py."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser import HostSite, browser, screenshot
from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne and Chromium

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0"}
PRICING = ("# Plans and pricing\n\n"
           "- **Starter** costs $49 per seat per month and includes the chat widget.\n"
           "- **Growth** costs $89 per seat per month and adds meeting booking and the CRM sync.\n"
           "\nAnnual billing saves 15% on any plan, and nonprofits get 30% off.")
SETUP = """
from knowledge.services import document_create, document_index
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, tenant_set_facts
from widget.services import widget_settings_update
tenant = Tenant.objects.get(pk={tenant!r})
tenant_set_allowed_origins(tenant=tenant, origins=[{origin!r}])
tenant_set_facts(tenant=tenant, pricing_url="https://acme.example/pricing")
widget_settings_update(tenant=tenant, title="Acme Sales", greeting="Hi! Ask me anything.",
                       position="bottom-right", primary_color="#4f46e5", text_color="#ffffff")
document = document_create(tenant=tenant, livemode=True, title="Plans and pricing",
                           type="markdown", data={pricing!r}.encode())
document_index(document_id=document.pk)
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var")),
           "CELERY_TASK_ALWAYS_EAGER": "1"}
    manage("migrate", "--noinput", env=env)
    tenant = json.loads(manage("create_tenant", "Acme", "--json", env=env))["tenant"]
    with daphne(env) as base:
        site = HostSite(base, tenant["publicId"])
        manage("shell", "-c", SETUP.format(tenant=tenant["id"], origin=site.origin,
                                            pricing=PRICING), env=env)
        with browser() as chromium:
            yield {"site": site, "browser": chromium}
        site.close()


def _ask(page, text):
    page.locator("#sw-input").fill(text)
    page.locator("#sw-input").press("Enter")
    page.wait_for_function(
        "() => { const r = document.querySelector('[data-service-widget]')?.shadowRoot;"
        " return r?.querySelector('.log')?.getAttribute('aria-busy') === 'false'; }",
        timeout=15000)
    return page.locator(".msg.bot:not(.greeting) > div").last.inner_text()


def test_answers_name_their_document_and_say_nothing_twice(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(stack["site"].origin + "/")
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    page.locator("button.launcher").click()
    page.locator("#sw-input").wait_for()

    first = _ask(page, "How much does it cost per month?")
    assert first.startswith('According to "Plans and pricing": Starter costs $49 per seat')
    screenshot(page, "widget-knowledge-answer.png")
    again = _ask(page, "How much does it cost per month?")
    screenshot(page, "widget-pricing-again.png")
    other = _ask(page, "Do you integrate with Salesforce?")
    replies = [first, again, other]
    for reply in replies:
        assert not re.search(r"^\s*>|_Source", reply, re.MULTILINE), reply
    sentences = [s for reply in replies for s in re.split(r"(?<=[.!?])\s+|\n+", reply) if s]
    assert len(sentences) == len(set(sentences)), sentences
    assert sum("email" in reply.lower() for reply in replies) == 1
    context.close()
