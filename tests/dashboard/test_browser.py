"""The dashboard's webhooks, analytics and knowledge-base pages in a real browser (headless
Chromium) against a real daphne process: a webhook delivery that failed against a local receiver
is retried from its page with the Retry button, the receiver gets the retry and the page shows it
delivered; the analytics page draws its charts without any script; a PDF uploaded through the
file input is indexed by a real Celery worker, shows Ready, and is deleted. Screenshots go to
docs/screenshots/ with ``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import json
import time

import pytest

from tests import knowledge_files as files
from tests.browser import browser, screenshot
from tests.fakes.webhook_receiver import Answer, WebhookReceiver
from tests.live import celery_worker, daphne, manage

pytestmark = pytest.mark.live  # daphne, a Celery worker and Chromium

PASSWORD = "correct-horse-battery"
# The embedded default (SQLite in VAR_DIR, in-memory layer): the server must not inherit the test
# run's DATABASE_URL, whose database is inside the run's transaction (or may not exist).
EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0",
            # The receiver listens on 127.0.0.1 over plain HTTP.
            "WEBHOOKS_ALLOW_HTTP": "1", "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1",
            "WEBHOOKS_TIMEOUT_SECONDS": "5",
            # No worker runs beside the server: the delivery task runs in the process that
            # enqueues it, after the commit, as a worker would run it a moment later.
            "CELERY_TASK_ALWAYS_EAGER": "1"}

SETUP = """
from datetime import timedelta
from analytics.services import record_widget_visit
from leads.services import lead_create, lead_update
from tenants.models import Tenant
from tenants.services import user_create
from webhooks import services
from webhooks.models import Delivery
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
services.subscription_create(tenant=tenant, livemode=True, url={url!r},
                             events=["lead.created", "lead.updated"])
services.legacy_webhook_create(tenant=tenant, url={url!r} + "/legacy", events=["lead.qualified"])
for i in range(40):
    record_widget_visit(tenant=tenant, visitor_id="v%d" % i)
lead = lead_create(tenant=tenant, livemode=True, email="ann@hooli.com", name="Ann Lee",
                   company="Hooli")
lead_create(tenant=tenant, livemode=True, email="bob@globex.com", name="Bob", source="form")
lead_update(lead=lead, changes={{"status": "qualified"}})
# Three of the visitors chat on the widget; one leaves her email.
from asgiref.sync import async_to_sync
from agent.providers import provider_for
from conversations.services import TurnInput, run_turn, turn_open
for i, text in enumerate(["What does it cost?", "I'm Dee, dee@initech.com", "Hello"]):
    opened = turn_open(TurnInput(tenant=tenant, livemode=True, visitor_id="v%d" % i, message=text,
                                 channel="web_chat"))
    async_to_sync(run_turn)(opened, provider_for(tenant))
# Three weeks of history for the charts.
from django.utils import timezone
for d in range(1, 21):
    day = timezone.now() - timedelta(days=d)
    for i in range(2 + d % 5):
        record_widget_visit(tenant=tenant, visitor_id="d%dv%d" % (d, i), at=day)
    for i in range(d % 4):
        lead_create(tenant=tenant, livemode=True, email="d%dl%d@example.com" % (d, i),
                    source="form", created_at=day)
# Every attempt of the first delivery failed (the receiver answers 500): run its schedule out.
delivery = Delivery.objects.filter(surface="v1", event__type="lead.created").order_by("created_at").first()
now = delivery.next_attempt_at
while delivery.status != "failed":
    services.delivery_attempt(delivery_id=delivery.pk, now=now)
    delivery.refresh_from_db()
    now = (delivery.next_attempt_at or now) + timedelta(seconds=1)
print(delivery.pk)
"""


@pytest.fixture(scope="module")
def chromium():
    """One browser for the module: Playwright's sync API runs one instance per thread."""
    with browser() as instance:
        yield instance


@pytest.fixture(scope="module")
def stack(chromium, tmp_path_factory):
    receiver = WebhookReceiver()
    receiver.default = Answer(status=500, body=b"receiver down")
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    delivery_id = manage("shell", "-c", SETUP.format(
        tenant=acme["tenant"]["id"], password=PASSWORD, url=receiver.url()), env=env).split()[-1]
    try:
        with daphne(env) as base:
            yield {"base": base, "browser": chromium, "receiver": receiver,
                   "delivery": delivery_id}
    finally:
        receiver.close()


@pytest.fixture
def page(stack):
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(stack["base"] + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(stack["base"] + "/dashboard/")
    yield page
    context.close()


def test_a_failed_delivery_is_retried_from_its_page(stack, page):
    base, receiver, delivery = stack["base"], stack["receiver"], stack["delivery"]
    failed_requests = len(receiver.received)
    assert failed_requests >= 7  # the whole v1 schedule, plus the other deliveries' attempts
    page.get_by_role("link", name="Webhooks").click()
    failed = page.locator(f"#failed tr[data-delivery='{delivery}']")
    assert "HTTP 500" in failed.inner_text()
    screenshot(page, "dashboard-webhooks.png", full_page=True)

    receiver.default = Answer(status=200)  # the receiver is fixed
    failed.get_by_role("button", name="Retry").click()
    page.wait_for_url(f"{base}/dashboard/webhooks/deliveries/{delivery}/")
    arrived = receiver.wait_for(failed_requests + 1)
    retry = arrived[failed_requests]
    assert retry.path == "/hooks" and retry.headers["x-service-event"] == "lead.created"
    assert "ann@hooli.com" in retry.body.decode()
    assert page.locator("#delivery-status").inner_text() == "Delivered"
    assert "Retry queued" in page.locator(".messages").inner_text()
    rows = page.locator("table tbody tr")
    assert rows.count() == 8 and "Manual" in rows.last.inner_text() and "HTTP 200" in rows.last.inner_text()
    screenshot(page, "dashboard-webhook-delivery.png", full_page=True)
    page.goto(base + "/dashboard/webhooks/")
    assert page.locator("#failed").count() == 0


def test_the_analytics_page_draws_its_charts_without_scripts(stack, page):
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.get_by_role("link", name="Analytics").click()
    page.wait_for_url(stack["base"] + "/dashboard/analytics/")
    leads = 3 + sum(d % 4 for d in range(1, 21))
    # Every lead is a visitor; v1, whose chat left Dee's lead, counts once, as that lead.
    visitors = 40 + sum(2 + d % 5 for d in range(1, 21)) - 1 + leads
    assert page.locator("[data-stage='Visitors'] .count").inner_text() == str(visitors)
    assert page.locator("[data-stage='Engaged (Started Chat)'] .count").inner_text() == str(2 + leads)
    assert page.locator("[data-stage='Lead Captured'] .count").inner_text() == str(leads)
    rates = [int(text.strip("→ %next")) for text in page.locator(".funnel .rate").all_inner_texts()]
    assert rates and all(0 <= rate <= 100 for rate in rates)
    # The two conversion figures, each named for what it divides, with a line saying what.
    stat = page.locator("#stat-conversation-rate")
    assert stat.locator("b").inner_text() == "33%"  # one conversation of three left a lead
    assert "Conversation → lead rate" in stat.inner_text()
    assert "produced a lead" in stat.inner_text()
    overall = page.locator("#funnel-overall")
    assert overall.locator("b").inner_text() == "0%"  # nobody converted yet
    assert "Visitor → converted (whole funnel)" in overall.inner_text()
    assert "Converted ÷ Visitors" in page.locator("#funnel").inner_text()
    assert page.locator("svg.chart polyline").count() == 3
    box = page.locator("svg.chart").bounding_box()
    assert box["width"] > 600 and box["height"] > 150
    assert all(url.startswith(stack["base"]) for url in requests)
    # No script but the dashboard's shared one (Copy buttons, confirmations): none draws.
    assert [s.get_attribute("src") for s in page.locator("script").all()] == [
        "/static/dashboard/dashboard.js"]
    screenshot(page, "dashboard-analytics.png", full_page=True)


KNOWLEDGE_SETUP = """
from knowledge.services import document_create, document_index
from tenants.models import Tenant
from tenants.services import user_create
from tests import knowledge_files as files
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
for title, type, data in [
    ("Pricing", "markdown", b"# Plans\\n\\nStarter is $49 per seat a month.\\n\\n# Enterprise\\n\\nAsk us."),
    ("Objections", "faq", b"Q: Is it secure?\\nA: Yes: SOC 2 Type II, data stays in the EU."),
    ("Scanned brochure", "pdf", files.corrupt_pdf()),
]:
    document_index(document_id=document_create(tenant=tenant, livemode=True, title=title,
                                               type=type, data=data).pk)
"""


@pytest.fixture(scope="module")
def knowledge_stack(chromium, tmp_path_factory):
    """Daphne and a real Celery worker on one embedded default: uploads are queued on the
    SQLite broker and indexed by the worker, as with ``make run`` (no eager tasks)."""
    var = tmp_path_factory.mktemp("knowledge")
    env = {**EMBEDDED, "VAR_DIR": str(var), "CELERY_TASK_ALWAYS_EAGER": None,
           "KNOWLEDGE_PARSE_TIMEOUT_SECONDS": "30"}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", KNOWLEDGE_SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD),
           env=env)
    with daphne(env) as base, celery_worker(env, var / "worker.log") as worker:
        yield {"base": base, "browser": chromium, "worker": worker, "worker_log": var / "worker.log"}


def test_a_pdf_is_uploaded_indexed_and_deleted(knowledge_stack, tmp_path):
    base = knowledge_stack["base"]
    pdf = tmp_path / "handbook.pdf"
    pdf.write_bytes(files.make_pdf([["Our widget installs with one script tag."],
                                    ["Refunds are possible within 30 days of purchase."]]))
    context = knowledge_stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")

    page.get_by_role("link", name="Knowledge base").click()
    page.wait_for_url(base + "/dashboard/knowledge/")
    page.set_input_files("#file_file", str(pdf))
    page.fill("#file_title", "Product handbook")
    page.get_by_role("button", name="Upload", exact=True).click()
    page.wait_for_url(base + "/dashboard/knowledge/")
    assert "Uploaded “Product handbook” — indexing" in page.locator(".messages").inner_text()
    row = page.locator("#documents tbody tr", has_text="Product handbook")
    assert "handbook.pdf" in row.inner_text() and "PDF" in row.inner_text()

    # The worker indexes it; a reload shows the new status (no script needed).
    deadline = time.monotonic() + 60
    while row.get_attribute("data-status") == "processing":
        assert time.monotonic() < deadline, knowledge_stack["worker_log"].read_text()[-2000:]
        assert knowledge_stack["worker"].poll() is None, knowledge_stack["worker_log"].read_text()
        time.sleep(0.5)
        page.reload()
    assert row.get_attribute("data-status") == "ready"
    cells = row.locator("td")
    assert cells.nth(2).inner_text() == "Ready" and cells.nth(4).inner_text() == "2 (2 pages)"
    failed = page.locator("#documents tbody tr", has_text="Scanned brochure")
    assert "looks damaged" in failed.inner_text()
    screenshot(page, "dashboard-knowledge.png", full_page=True)

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Delete").click()
    page.wait_for_url(base + "/dashboard/knowledge/")
    assert "Deleted “Product handbook”" in page.locator(".messages").inner_text()
    assert page.locator("#documents tbody tr", has_text="Product handbook").count() == 0
    assert page.locator("#documents tbody tr").count() == 3
    context.close()
