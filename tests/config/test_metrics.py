"""``GET /metrics`` and the request middleware, in-process through the ASGI application
(issue 31, "Metrics"; docs/operations.md). The same series through a real Prometheus server:
tests/config/test_metrics_prometheus.py."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from config.handlers import get_asgi_application
from config.logs import surface_of
from config.settings.metrics import metrics_settings
from conversations.models import Conversation, ConversationStatus, OutboundEmail
from core.models import Event
from knowledge.models import Document
from tests.conftest import ApiClient
from tests.factories import make_tenant
from webhooks.models import Delivery, Subscription

TOKEN = "metrics-test-token-0123456789"
SCRAPE = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_TOKEN = TOKEN


@pytest.fixture
def measured(metrics_on) -> ApiClient:
    """A client of an application built while METRICS_TOKEN is set: its chain has the
    request middleware (the suite's own application was built without it)."""
    import httpx

    client = ApiClient()
    client._transport = httpx.ASGITransport(app=get_asgi_application())
    return client


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(text: str, name: str, **labels) -> float | None:
    return samples(text).get((name, frozenset(labels.items())))


def scrape(api) -> str:
    response = api.get("/metrics", headers=SCRAPE)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return response.text


@pytest.mark.django_db
def test_metrics_are_not_there_while_the_token_is_unset(api, settings):
    settings.METRICS_TOKEN = ""
    assert api.get("/metrics").status_code == 404
    assert api.get("/metrics", headers=SCRAPE).status_code == 404


@pytest.mark.django_db
def test_only_the_bearer_of_the_token_reads_them(api, metrics_on):
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"},
                    {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}):
        response = api.get("/metrics", headers=headers)
        assert response.status_code == 401, headers
        assert TOKEN not in response.text and "salesagent_" not in response.text
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert "salesagent_work_waiting" in scrape(api)


def test_a_bad_token_or_directory_stops_the_process(monkeypatch, tmp_path):
    for bad in ("short", "has spaces in it 0123456789", "x" * 300):
        monkeypatch.setenv("METRICS_TOKEN", bad)
        with pytest.raises(ImproperlyConfigured, match="METRICS_TOKEN"):
            metrics_settings(tmp_path)
    monkeypatch.setenv("METRICS_TOKEN", TOKEN)
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("METRICS_DIR", str(blocker / "metrics"))
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "")
    with pytest.raises(ImproperlyConfigured, match="METRICS_DIR"):
        metrics_settings(tmp_path)


@pytest.mark.django_db
def test_requests_are_counted_by_surface_route_template_and_status(measured, kit):
    lead_id = f"lead_{uuid.uuid4().hex}"
    before = scrape(measured)
    labels = {"surface": "v1", "route": "/api/v1/users", "method": "GET"}
    count = value(before, "salesagent_http_requests_total", **labels, status="200") or 0
    for _ in range(3):
        assert measured.get("/api/v1/users", headers=kit.auth("read")).status_code == 200
    assert measured.get(f"/api/v1/leads/{lead_id}", headers=kit.auth("read")).status_code == 404
    assert measured.get("/api/v1/users", headers={"Method": "x"}).status_code == 401
    assert measured.get("/no/such/page").status_code == 404
    after = scrape(measured)
    assert value(after, "salesagent_http_requests_total", **labels, status="200") == count + 3
    assert value(after, "salesagent_http_requests_total", **labels, status="401") >= 1
    assert value(after, "salesagent_http_request_duration_seconds_count", **labels) >= count + 3
    route = [labels for (name, labels) in samples(after)
             if name == "salesagent_http_requests_total" and ("status", "404") in labels]
    assert {dict(one)["route"] for one in route} >= {"/api/v1/leads/<id>", "unmatched"}
    assert lead_id not in after and "/no/such/page" not in after


@pytest.mark.django_db
def test_the_scrape_costs_a_fixed_number_of_statements(api, metrics_on,
                                                       django_assert_max_num_queries):
    with django_assert_max_num_queries(10):
        empty = scrape(api)
    assert value(empty, "salesagent_handoffs_waiting") == 0
    assert value(empty, "salesagent_work_waiting", kind="email", state="queued", mode="live") == 0
    _backlog(make_tenant("Metrics Co"), rows=3)
    _backlog(make_tenant("Other Co"), rows=2)
    with django_assert_max_num_queries(10):
        full = scrape(api)
    # Each tenant's rows, summed: no tenant label anywhere.
    assert value(full, "salesagent_work_waiting", kind="webhook_delivery", state="pending",
                 mode="live") == 5
    assert value(full, "salesagent_work_waiting", kind="email", state="queued", mode="live") == 5
    assert value(full, "salesagent_handoffs_waiting") == 5
    assert 590 <= value(full, "salesagent_handoffs_oldest_waiting_seconds") <= 700
    assert 3590 <= value(full, "salesagent_work_oldest_due_seconds", kind="email") <= 3700
    assert value(full, "salesagent_knowledge_documents", state="processing", mode="live") == 5
    assert value(full, "salesagent_knowledge_indexing_oldest_seconds") >= 1790
    assert "tenant" not in {key for (_, labels) in samples(full) for key, _ in labels}
    assert value(full, "salesagent_celery_queue_depth", queue="celery") is not None


def _backlog(kit, *, rows: int) -> None:
    """``rows`` each of waiting deliveries, queued emails, unassigned handoffs and documents
    being indexed, all an hour old (the handoffs ten minutes)."""
    now = timezone.now()
    tenant = kit.tenant
    subscription = Subscription.objects.create(
        tenant=tenant, livemode=True, url="https://example.com/hook", events=["lead.created"],
        secret_encrypted="x")
    for _ in range(rows):
        event = Event.objects.create(tenant=tenant, livemode=True, type="lead.created", description="x")
        Delivery.objects.create(tenant=tenant, livemode=True, surface="v1", event=event,
                                subscription=subscription, next_attempt_at=now)
        OutboundEmail.objects.create(tenant=tenant, livemode=True, kind="meeting_invitation",
                                     to="a@example.com", from_email="b@example.com", subject="s",
                                     text_body="t", next_attempt_at=now - timedelta(hours=1))
        Conversation.objects.create(tenant=tenant, livemode=True, visitor_id="v",
                                    status=ConversationStatus.HANDED_OFF,
                                    handed_off_at=now - timedelta(minutes=10))
        Document.objects.create(tenant=tenant, livemode=True, title="d", type="text",
                                updated_at=now - timedelta(minutes=30))


def test_each_path_has_its_surface():
    assert {path: surface_of(path) for path in (
        "/api/v1/leads", "/api/v1", "/api/leads", "/api/widget", "/api/chat/stream",
        "/api/chat/typing", "/api/chat", "/widget.js", "/dashboard/leads/", "/admin/login/",
        "/metrics", "/")} == {
        "/api/v1/leads": "v1", "/api/v1": "v1", "/api/leads": "legacy", "/api/widget": "widget",
        "/api/chat/stream": "widget", "/api/chat/typing": "widget", "/api/chat": "legacy",
        "/widget.js": "widget", "/dashboard/leads/": "dashboard", "/admin/login/": "admin",
        "/metrics": "pages", "/": "pages"}


def test_chat_turns_are_counted_by_agent_and_path(measured, kit, fake):
    """The fake OpenAI-compatible server: a turn it answers (its analysis reports 20 tokens,
    its reply streams), then one it fails, which the builtin agent answers."""
    from tests.chat_helpers import chat

    def turns(text, path):
        return value(text, "salesagent_chat_turns_total", agent="openai", path=path) or 0

    before = scrape(measured)
    assert chat(measured, kit, "Hi, what do you sell?").status_code == 200
    answered = scrape(measured)
    assert turns(answered, "model") == turns(before, "model") + 1
    assert (value(answered, "salesagent_model_tokens_total", agent="openai", phase="analysis")
            - (value(before, "salesagent_model_tokens_total", agent="openai", phase="analysis")
               or 0)) == 20
    assert (value(answered, "salesagent_model_tokens_total", agent="openai", phase="reply")
            - (value(before, "salesagent_model_tokens_total", agent="openai", phase="reply")
               or 0)) >= 1
    assert (value(answered, "salesagent_model_time_to_first_token_seconds_count", agent="openai")
            - (value(before, "salesagent_model_time_to_first_token_seconds_count",
                     agent="openai") or 0)) == 1
    fake.fail_status = 500
    assert chat(measured, kit, "Hi again").status_code == 200
    failed = scrape(measured)
    assert turns(failed, "rules_fallback") == turns(answered, "rules_fallback") + 1
    assert (value(failed, "salesagent_provider_errors_total", agent="openai")
            - (value(answered, "salesagent_provider_errors_total", agent="openai") or 0)) == 1
    assert (value(failed, "salesagent_chat_turn_duration_seconds_count", agent="openai",
                  path="rules_fallback")) >= 1
