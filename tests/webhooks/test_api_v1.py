"""The v1 webhook endpoints through HTTP: subscriptions (create, list, retrieve, update, delete),
a subscription's deliveries with their attempts, and the manual retry. Every one is admin-only,
tenant- and mode-scoped, and answers a stranger with 404."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from tests.factories import make_lead
from tests.fakes.webhook_receiver import Answer
from webhooks import services
from webhooks.models import Delivery, Subscription

from .conftest import SECRET, attempt_now, envelope, fresh, v1_signature_ok

pytestmark = pytest.mark.usefixtures("local_targets")


def _create(api, kit, receiver, mode="live", **body):
    payload = {"url": receiver.url(), "events": ["lead.created"], **body}
    return api.post("/api/v1/webhooks", json=payload, headers=kit.auth("admin", mode))


def _details(response):
    return {(d["field"], d["code"]) for d in response.json()["error"]["details"]}


# --- create ---------------------------------------------------------------------------------

def test_create_returns_the_subscription_and_a_generated_secret_once(api, kit, receiver):
    r = _create(api, kit, receiver, events=["lead.created", "lead.qualified", "lead.created"])
    assert r.status_code == 201
    body = r.json()
    assert re.fullmatch(r"wh_[0-9a-f]{32}", body["id"])
    assert body["url"] == receiver.url()
    assert body["events"] == ["lead.created", "lead.qualified"]  # repeats dropped
    assert body["status"] == "active" and body["disabledReason"] is None
    assert body["createdAt"].endswith("Z")
    assert body["secret"].startswith("whsec_") and len(body["secret"]) >= 40

    stored = Subscription.objects.get()
    assert body["secret"] not in stored.secret_encrypted and stored.secret == body["secret"]
    assert stored.livemode is True and stored.tenant_id == kit.tenant.pk

    # Never again: neither the single read nor the list shows it.
    one = api.get(f"/api/v1/webhooks/{body['id']}", headers=kit.auth("admin")).json()
    assert "secret" not in one
    listed = api.get("/api/v1/webhooks", headers=kit.auth("admin")).json()["data"]
    assert all("secret" not in item for item in listed)


def test_a_given_secret_signs_the_deliveries(api, kit, receiver, enqueued,
                                             django_capture_on_commit_callbacks):
    r = _create(api, kit, receiver, secret=SECRET)
    assert r.status_code == 201 and r.json()["secret"] == SECRET
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    attempt_now(Delivery.objects.get())
    assert v1_signature_ok(receiver.received[0], SECRET)


@pytest.mark.parametrize(("body", "expected"), [
    ({"events": ["lead.created"]}, {("url", "required")}),
    ({"url": "x"}, {("events", "required")}),
    ({"url": "https://hooks.example.com/x", "events": []}, {("events", "required")}),
    ({"url": "https://hooks.example.com/x", "events": "lead.created"}, {("events", "invalid_format")}),
    ({"url": "https://hooks.example.com/x", "events": ["lead.created", "lead.exploded", 7]},
     {("events[1]", "invalid_enum"), ("events[2]", "invalid_format")}),
    ({"url": "https://hooks.example.com/x", "events": ["lead.score_changed"]},
     {("events[0]", "invalid_enum")}),  # an activity type, not a webhook one
    ({"url": "https://hooks.example.com/x", "events": ["lead.created"], "secret": "short"},
     {("secret", "too_short")}),
    ({"url": "https://hooks.example.com/x", "events": ["lead.created"], "secret": "s" * 257},
     {("secret", "too_long")}),
    ({"url": "https://hooks.example.com/" + "x" * 2048, "events": ["lead.created"]},
     {("url", "too_long")}),
])
def test_create_validation_errors_name_each_field(api, kit, body, expected):
    r = api.post("/api/v1/webhooks", json=body, headers=kit.auth("admin"))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert _details(r) == expected
    assert not Subscription.objects.exists()


def test_url_shape_errors_are_400(api, kit, settings):
    settings.WEBHOOKS_ALLOW_HTTP = False
    for url in ("http://hooks.example.com/x", "ftp://hooks.example.com/x", "hooks.example.com",
                "https://user:pw@hooks.example.com/x", "https:///nohost"):
        r = api.post("/api/v1/webhooks", json={"url": url, "events": ["lead.created"]},
                     headers=kit.auth("admin"))
        assert r.status_code == 400, url
        assert _details(r) == {("url", "invalid_format")}, url


@pytest.mark.parametrize(("url", "message"), [
    ("https://hooks.example.com:99999/x", "Not a valid URL."),
    ("ftp://hooks.example.com/x", "Expected an https:// URL."),
    ("http://hooks.example.com/x", "Use an https:// URL. For local development, set "
                                   "WEBHOOKS_ALLOW_HTTP=1."),
    ("https:///nohost", "The URL has no host."),
    ("https://user:pw@hooks.example.com/x", "Credentials in the URL are not allowed; deliveries are "
                                            "signed."),
    ("https://hooks.example.com/a b", "The URL contains whitespace."),
])
def test_url_shape_errors_say_what_is_wrong(api, kit, settings, url, message):
    settings.WEBHOOKS_ALLOW_HTTP = False
    r = api.post("/api/v1/webhooks", json={"url": url, "events": ["lead.created"]},
                 headers=kit.auth("admin"))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["details"] == [
        {"field": "url", "code": "invalid_format", "message": message}]


def test_every_v1_event_type_is_accepted(api, kit, receiver):
    types = list(services.envelopes.V1_EVENT_TYPES)
    assert len(types) == 14  # the specification's 11 and the meetings' 3
    r = _create(api, kit, receiver, events=types)
    assert r.status_code == 201 and r.json()["events"] == types


# --- scopes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("scope", ["read", "write"])
def test_every_webhook_endpoint_needs_the_admin_scope(api, kit, receiver, scope):
    sub, _ = services.subscription_create(tenant=kit.tenant, livemode=True, url=receiver.url(),
                                          events=["lead.created"])
    wid = f"wh_{sub.pk.hex}"
    calls = [
        ("GET", "/api/v1/webhooks", None), ("POST", "/api/v1/webhooks",
                                            {"url": receiver.url(), "events": ["lead.created"]}),
        ("GET", f"/api/v1/webhooks/{wid}", None), ("PATCH", f"/api/v1/webhooks/{wid}", {}),
        ("DELETE", f"/api/v1/webhooks/{wid}", None),
        ("GET", f"/api/v1/webhooks/{wid}/deliveries", None),
        ("POST", f"/api/v1/webhooks/deliveries/whd_{'0' * 32}/retry", None),
    ]
    for method, path, body in calls:
        r = api.request(method, path, json=body, headers=kit.auth(scope))
        assert r.status_code == 403, (method, path)
        assert r.json()["error"]["code"] == "forbidden"
    assert Subscription.objects.count() == 1


def test_no_key_is_401(api):
    r = api.get("/api/v1/webhooks")
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"


# --- list and retrieve ----------------------------------------------------------------------

def test_list_shows_the_tenants_subscriptions_of_the_keys_mode_newest_first(
        api, kit, stranger, receiver, django_assert_max_num_queries):
    made = [_create(api, kit, receiver).json()["id"] for _ in range(3)]
    test_id = _create(api, kit, receiver, mode="test").json()["id"]
    _create(api, stranger, receiver)

    with django_assert_max_num_queries(3):  # key, page, count
        r = api.get("/api/v1/webhooks?limit=2", headers=kit.auth("admin"))
    assert r.status_code == 200
    assert [s["id"] for s in r.json()["data"]] == made[::-1][:2]
    assert r.json()["pagination"] == {"page": 1, "limit": 2, "total": 3, "totalPages": 2,
                                      "hasMore": True}
    r = api.get("/api/v1/webhooks", headers=kit.auth("admin", "test"))
    assert [s["id"] for s in r.json()["data"]] == [test_id]
    r = api.get("/api/v1/webhooks?limit=0", headers=kit.auth("admin"))
    assert r.status_code == 400 and _details(r) == {("limit", "out_of_range")}


def test_retrieve_is_404_for_strangers_other_modes_and_bad_ids(api, kit, stranger, receiver):
    wid = _create(api, kit, receiver).json()["id"]
    assert api.get(f"/api/v1/webhooks/{wid}", headers=kit.auth("admin")).status_code == 200
    for headers in (stranger.auth("admin"), kit.auth("admin", "test")):
        r = api.get(f"/api/v1/webhooks/{wid}", headers=headers)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    for bad in ("lead_" + wid[3:], "wh_123", "nope"):
        assert api.get(f"/api/v1/webhooks/{bad}", headers=kit.auth("admin")).status_code == 404


# --- update and delete ----------------------------------------------------------------------

def test_patch_changes_url_events_and_status(api, kit, receiver, settings):
    wid = _create(api, kit, receiver).json()["id"]
    r = api.patch(f"/api/v1/webhooks/{wid}",
                  json={"url": receiver.url("/v2"), "events": ["lead.deleted", "message.sent"]},
                  headers=kit.auth("admin"))
    assert r.status_code == 200
    assert r.json()["url"] == receiver.url("/v2")
    assert r.json()["events"] == ["lead.deleted", "message.sent"]

    r = api.patch(f"/api/v1/webhooks/{wid}", json={"status": "disabled"}, headers=kit.auth("admin"))
    assert r.json()["status"] == "disabled" and r.json()["disabledReason"] == "Disabled through the API."
    r = api.patch(f"/api/v1/webhooks/{wid}", json={"status": "active"}, headers=kit.auth("admin"))
    assert r.json()["status"] == "active" and r.json()["disabledReason"] is None

    r = api.patch(f"/api/v1/webhooks/{wid}", json={"status": "paused", "events": ["nope"]},
                  headers=kit.auth("admin"))
    assert r.status_code == 400
    assert _details(r) == {("status", "invalid_enum"), ("events[0]", "invalid_enum")}
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    r = api.patch(f"/api/v1/webhooks/{wid}", json={"url": "https://10.0.0.8/x"},
                  headers=kit.auth("admin"))
    assert r.status_code == 422 and _details(r) == {("url", "invalid_format")}
    assert Subscription.objects.get().url == receiver.url("/v2")


def test_patch_and_delete_of_a_strangers_subscription_are_404(api, kit, stranger, receiver):
    wid = _create(api, kit, receiver).json()["id"]
    assert api.patch(f"/api/v1/webhooks/{wid}", json={"status": "disabled"},
                     headers=stranger.auth("admin")).status_code == 404
    assert api.delete(f"/api/v1/webhooks/{wid}", headers=stranger.auth("admin")).status_code == 404
    assert api.delete(f"/api/v1/webhooks/{wid}",
                      headers=kit.auth("admin", "test")).status_code == 404
    assert Subscription.objects.get().status == "active"


def test_delete_removes_the_subscription_and_its_pending_deliveries(
        api, kit, receiver, enqueued, django_capture_on_commit_callbacks):
    wid = _create(api, kit, receiver).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    r = api.delete(f"/api/v1/webhooks/{wid}", headers=kit.auth("admin"))
    assert r.status_code == 204 and r.content == b""
    assert api.get(f"/api/v1/webhooks/{wid}", headers=kit.auth("admin")).status_code == 404
    assert attempt_now(delivery) is None and receiver.received == []


# --- deliveries and retry -------------------------------------------------------------------

def _failed_delivery(api, kit, receiver, django_capture_on_commit_callbacks):
    receiver.default = Answer(status=500, body=b"boom")
    wid = _create(api, kit, receiver, secret=SECRET).json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    attempt_now(delivery)
    Delivery.objects.filter(pk=delivery.pk).update(attempt_count=6,
                                                    next_attempt_at=timezone.now())
    attempt_now(delivery)  # the seventh and last
    assert fresh(delivery).status == "failed"
    return wid, fresh(delivery)


def test_deliveries_list_shows_attempts(api, kit, stranger, receiver, enqueued,
                                        django_capture_on_commit_callbacks,
                                        django_assert_max_num_queries):
    wid, delivery = _failed_delivery(api, kit, receiver, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)  # a second delivery, still pending

    with django_assert_max_num_queries(5):  # key, subscription, page, count, attempts
        r = api.get(f"/api/v1/webhooks/{wid}/deliveries", headers=kit.auth("admin"))
    assert r.status_code == 200
    data = r.json()["data"]
    assert [d["status"] for d in data] == ["pending", "failed"]
    failed = data[1]
    assert failed["id"] == f"whd_{delivery.pk.hex}" and failed["webhookId"] == wid
    assert failed["eventId"] == f"evt_{delivery.event_id.hex}"
    assert failed["eventType"] == "lead.created" and failed["attemptCount"] == 7
    assert failed["nextAttemptAt"] is None and failed["deliveredAt"] is None
    assert [a["number"] for a in failed["attempts"]] == [1, 7]
    first = failed["attempts"][0]
    assert first["statusCode"] == 500 and first["success"] is False
    assert first["trigger"] == "scheduled" and first["responseExcerpt"] == "boom"
    assert "500" in first["error"] and first["durationMs"] >= 0
    assert first["id"] == receiver.received[0].headers["x-service-delivery"]

    r = api.get(f"/api/v1/webhooks/{wid}/deliveries?status=failed", headers=kit.auth("admin"))
    assert [d["id"] for d in r.json()["data"]] == [failed["id"]]
    r = api.get(f"/api/v1/webhooks/{wid}/deliveries?status=lost", headers=kit.auth("admin"))
    assert r.status_code == 400 and _details(r) == {("status", "invalid_enum")}
    r = api.get(f"/api/v1/webhooks/{wid}/deliveries", headers=stranger.auth("admin"))
    assert r.status_code == 404
    r = api.get(f"/api/v1/webhooks/{wid}/deliveries", headers=kit.auth("admin", "test"))
    assert r.status_code == 404


def test_manual_retry_of_a_failed_delivery(api, kit, receiver, enqueued,
                                           django_capture_on_commit_callbacks):
    wid, delivery = _failed_delivery(api, kit, receiver, django_capture_on_commit_callbacks)
    receiver.default = Answer(status=200)
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"/api/v1/webhooks/deliveries/whd_{delivery.pk.hex}/retry",
                     headers=kit.auth("admin"))
    assert r.status_code == 202
    assert r.json()["status"] == "pending" and r.json()["id"] == f"whd_{delivery.pk.hex}"
    assert enqueued == [delivery.pk]

    attempt = attempt_now(delivery)
    assert attempt.trigger == "manual" and attempt.number == 8 and attempt.success
    assert fresh(delivery).status == "delivered"
    ids = {envelope(req)["id"] for req in receiver.received}
    assert ids == {f"evt_{delivery.event_id.hex}"}  # the same event id, attempt after attempt
    assert len({req.headers["x-service-delivery"] for req in receiver.received}) == 3

    # A delivered delivery may be replayed; a pending one is already on its way.
    assert api.post(f"/api/v1/webhooks/deliveries/whd_{delivery.pk.hex}/retry",
                    headers=kit.auth("admin")).status_code == 202
    r = api.post(f"/api/v1/webhooks/deliveries/whd_{delivery.pk.hex}/retry",
                 headers=kit.auth("admin"))
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"


def test_a_failed_manual_retry_fails_again_without_a_new_schedule(
        api, kit, receiver, enqueued, django_capture_on_commit_callbacks):
    wid, delivery = _failed_delivery(api, kit, receiver, django_capture_on_commit_callbacks)
    api.post(f"/api/v1/webhooks/deliveries/whd_{delivery.pk.hex}/retry", headers=kit.auth("admin"))
    attempt = attempt_now(delivery)
    assert attempt.trigger == "manual" and not attempt.success
    assert fresh(delivery).status == "failed" and fresh(delivery).next_attempt_at is None


def test_retry_is_404_for_strangers_and_409_for_a_disabled_subscription(
        api, kit, stranger, receiver, enqueued, django_capture_on_commit_callbacks):
    wid, delivery = _failed_delivery(api, kit, receiver, django_capture_on_commit_callbacks)
    path = f"/api/v1/webhooks/deliveries/whd_{delivery.pk.hex}/retry"
    assert api.post(path, headers=stranger.auth("admin")).status_code == 404
    assert api.post(path, headers=kit.auth("admin", "test")).status_code == 404
    assert api.post(f"/api/v1/webhooks/deliveries/wh_{delivery.pk.hex}/retry",
                    headers=kit.auth("admin")).status_code == 404
    api.patch(f"/api/v1/webhooks/{wid}", json={"status": "disabled"}, headers=kit.auth("admin"))
    r = api.post(path, headers=kit.auth("admin"))
    assert r.status_code == 409 and "re-enable" in r.json()["error"]["message"]
    assert fresh(delivery).status == "failed"


def test_a_waiting_deliverys_next_attempt_is_brought_forward(api, kit, receiver, enqueued,
                                                              django_capture_on_commit_callbacks):
    receiver.default = Answer(status=500)
    _create(api, kit, receiver)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    delivery = Delivery.objects.get()
    attempt_now(delivery)
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"/api/v1/webhooks/deliveries/whd_{delivery.pk.hex}/retry",
                     headers=kit.auth("admin"))
    assert r.status_code == 202 and r.json()["status"] == "waiting_retry"
    assert enqueued == [delivery.pk]
    # Made now, by hand; it failed, and the schedule goes on from it (the third comes 5 min on).
    attempt = attempt_now(delivery)
    assert (attempt.number, attempt.trigger) == (2, "manual")
    assert fresh(delivery).status == "waiting_retry"
    assert fresh(delivery).next_attempt_at - attempt.attempted_at == services.V1_SCHEDULE.delays[1]
    # Asked again while its time has come: it is on its way already.
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    r = api.post(f"/api/v1/webhooks/deliveries/whd_{delivery.pk.hex}/retry",
                 headers=kit.auth("admin"))
    assert r.status_code == 409 and "on its way" in r.json()["error"]["message"]
