"""Idempotency-Key on v1 POSTs: replays without a second side effect, 422 on another body, 409
while the first request runs, keys per API key, 24-hour expiry, what is stored and what not."""

import os
import subprocess
import sys
import time

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from apikeys import services
from apikeys.models import ApiKey, IdempotencyKey, IdempotencyState
from apikeys.tasks import idempotency_keys_purge_task
from config.api.idempotency import fingerprint
from tests.limits import preset, v1_identity

KEYS = "/api/v1/_probe/keys"  # creates an API key per call: a side effect we can count


@pytest.fixture(autouse=True)
def probes(settings):
    settings.ROOT_URLCONF = "tests.urls_limits"


def _post(api, kit, body, key="retry-1", scope="write", mode="live", **headers):
    return api.post(KEYS, json=body, headers={**kit.auth(scope, mode), "Idempotency-Key": key,
                                               **headers})


def _keys(kit) -> int:
    return ApiKey.objects.filter(tenant=kit.tenant).count()


def test_a_retry_gets_the_first_response_without_a_second_side_effect(api, kit):
    before = _keys(kit)
    first = _post(api, kit, {"name": "CRM sync"})
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    assert _keys(kit) == before + 1
    again = _post(api, kit, {"name": "CRM sync"})
    assert _keys(kit) == before + 1
    assert again.status_code == 201
    assert again.content == first.content
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Content-Type"] == first.headers["Content-Type"]
    assert again.headers["Idempotent-Replayed"] == "true"
    # A replay is a request: it is counted and carries its own rate-limit headers.
    assert int(again.headers["X-RateLimit-Remaining"]) == int(first.headers["X-RateLimit-Remaining"]) - 1


def test_the_same_body_in_another_layout_is_the_same_request(api, kit):
    first = api.post(KEYS, content=b'{"name": "A", "x": 1}',
                     headers={**kit.auth("write"), "Idempotency-Key": "k",
                              "Content-Type": "application/json"})
    again = api.post(KEYS, content=b'{ "x":1,"name":"A" }',
                     headers={**kit.auth("write"), "Idempotency-Key": "k",
                              "Content-Type": "application/json"})
    assert again.headers["Idempotent-Replayed"] == "true" and again.content == first.content


def test_the_same_key_with_another_body_is_422(api, kit):
    _post(api, kit, {"name": "one"})
    before = _keys(kit)
    r = _post(api, kit, {"name": "two"})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "unprocessable"
    assert "Idempotency-Key" in r.json()["error"]["message"]
    assert _keys(kit) == before


def test_the_same_key_on_another_endpoint_is_422(api, kit):
    _post(api, kit, {})
    r = api.post("/api/v1/_probe/leads", json={}, headers={**kit.auth("write"), "Idempotency-Key": "retry-1"})
    assert r.status_code == 422


def test_keys_belong_to_one_api_key(api, kit, stranger):
    before = _keys(kit)
    _post(api, kit, {"name": "n"}, scope="write")
    other = _post(api, kit, {"name": "n"}, scope="admin")  # the same string, another API key
    assert other.status_code == 201 and "Idempotent-Replayed" not in other.headers
    assert _keys(kit) == before + 2
    theirs = _post(api, stranger, {"name": "n"})
    assert theirs.status_code == 201 and "Idempotent-Replayed" not in theirs.headers


def test_a_duplicate_while_the_first_request_runs_is_409(api, kit):
    # The first request is still running (in another process): its record is in progress.
    # (tests/config/ratelimit/test_live.py overlaps two real requests on a live server.)
    services.idempotency_claim(api_key=kit.key_rows["live"]["write"], key="busy",
                               fingerprint=fingerprint("POST", KEYS, {"name": "n"}))
    before = _keys(kit)
    r = _post(api, kit, {"name": "n"}, key="busy")
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"
    assert "still being processed" in r.json()["error"]["message"]
    assert _keys(kit) == before
    # With another body, reusing the key is the client's mistake whatever the first one's state.
    assert _post(api, kit, {"name": "m"}, key="busy").status_code == 422


def test_an_abandoned_request_is_taken_over_after_the_lock(api, kit, settings):
    fp = fingerprint("POST", KEYS, {"name": "n"})
    record = services.idempotency_claim(api_key=kit.key_rows["live"]["write"], key="dead", fingerprint=fp)
    assert _post(api, kit, {"name": "n"}, key="dead").status_code == 409
    IdempotencyKey.objects.filter(pk=record.pk).update(
        locked_at=timezone.now() - timezone.timedelta(seconds=settings.IDEMPOTENCY_LOCK_SECONDS + 1))
    r = _post(api, kit, {"name": "n"}, key="dead")
    assert r.status_code == 201 and "Idempotent-Replayed" not in r.headers
    assert _post(api, kit, {"name": "n"}, key="dead").headers["Idempotent-Replayed"] == "true"


@pytest.fixture
def rival(monkeypatch):
    """Another request takes over each record just before this one tries to (the compare-and-swap
    on locked_at is what lets only one of them win)."""
    take = services._idempotency_take

    def rival_first(record, **kwargs):
        take(IdempotencyKey.objects.get(pk=record.pk), **kwargs)
        return take(record, **kwargs)

    monkeypatch.setattr(services, "_idempotency_take", rival_first)


@pytest.mark.parametrize("left", ["abandoned", "expired"])
def test_a_takeover_lost_to_another_request_is_409(api, kit, settings, rival, left):
    fp = fingerprint("POST", KEYS, {"name": "n"})
    record = services.idempotency_claim(api_key=kit.key_rows["live"]["write"], key="k", fingerprint=fp)
    long_ago = timezone.now() - timezone.timedelta(hours=25)
    IdempotencyKey.objects.filter(pk=record.pk).update(
        locked_at=long_ago, **({"created_at": long_ago} if left == "expired" else {}))
    before = _keys(kit)
    r = _post(api, kit, {"name": "n"}, key="k")
    assert r.status_code == 409 and "still being processed" in r.json()["error"]["message"]
    assert _keys(kit) == before


def test_after_24_hours_a_key_is_new_again(api, kit):
    first = _post(api, kit, {"name": "n"})
    IdempotencyKey.objects.filter(key="retry-1").update(
        created_at=timezone.now() - timezone.timedelta(hours=24, seconds=1))
    before = _keys(kit)
    again = _post(api, kit, {"name": "other body is fine too"})
    assert again.status_code == 201 and "Idempotent-Replayed" not in again.headers
    assert again.json()["id"] != first.json()["id"]
    assert _keys(kit) == before + 1
    assert IdempotencyKey.objects.filter(key="retry-1").count() == 1  # overwritten, not added


def test_server_errors_are_not_stored_so_the_retry_runs(api, kit):
    r = _post(api, kit, {"fail": True})
    assert r.status_code == 500
    assert not IdempotencyKey.objects.filter(key="retry-1").exists()
    assert _post(api, kit, {"fail": True}).status_code == 500  # ran again, not replayed


def test_client_errors_are_stored(api, kit):
    r = _post(api, kit, {"name": ""})  # the service refuses an empty name: 422
    assert r.status_code == 422
    again = _post(api, kit, {"name": ""})
    assert again.status_code == 422 and again.headers["Idempotent-Replayed"] == "true"
    assert again.content == r.content


def test_a_rate_limited_request_is_not_stored(api, kit, clock):
    preset(v1_identity(kit, "write"), "minute", 60)
    assert _post(api, kit, {"name": "n"}).status_code == 429
    assert not IdempotencyKey.objects.exists()
    clock.advance(60)
    assert _post(api, kit, {"name": "n"}).status_code == 201


@pytest.mark.parametrize(("key", "code"), [("x" * 256, "too_long"), ("   ", "too_short")])
def test_a_key_must_be_1_to_255_characters(api, kit, key, code):
    r = _post(api, kit, {"name": "n"}, key=key)
    assert r.status_code == 400
    assert r.json()["error"]["details"] == [
        {"field": "Idempotency-Key", "code": code, "message": r.json()["error"]["details"][0]["message"]}]
    assert _post(api, kit, {"name": "n"}, key="x" * 255).status_code == 201


def test_a_malformed_body_is_400_and_not_stored(api, kit):
    r = api.post(KEYS, content=b"{nope", headers={**kit.auth("write"), "Idempotency-Key": "m",
                                                  "Content-Type": "application/json"})
    assert r.status_code == 400
    assert not IdempotencyKey.objects.exists()


def test_refused_requests_do_not_occupy_a_key(api, kit):
    r = _post(api, kit, {"name": "n"}, scope="read")  # 403: read keys cannot POST
    assert r.status_code == 403
    assert not IdempotencyKey.objects.exists()


def test_only_posts_use_the_header(api, kit):
    r = api.get("/api/v1/users", headers={**kit.auth("read"), "Idempotency-Key": "x" * 300})
    assert r.status_code == 200
    assert not IdempotencyKey.objects.exists()


def test_streamed_responses_are_not_stored(api, kit):
    r = api.post("/api/v1/_probe/chat", json={"stream": True, "hold": 0.01},
                 headers={**kit.auth("write"), "Idempotency-Key": "s"})
    assert r.status_code == 200 and "message_end" in r.text
    assert not IdempotencyKey.objects.exists()


def test_records_carry_tenant_and_mode_and_expired_ones_are_purged(api, kit):
    _post(api, kit, {"name": "n"}, mode="test")
    record = IdempotencyKey.objects.get()
    assert record.tenant == kit.tenant and record.livemode is False
    assert record.state == IdempotencyState.COMPLETED and record.response_status == 201
    _post(api, kit, {"name": "n"}, key="fresh")
    IdempotencyKey.objects.filter(pk=record.pk).update(
        created_at=timezone.now() - timezone.timedelta(hours=25))
    assert idempotency_keys_purge_task() == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["fresh"]


def test_the_purge_runs_hourly_on_beat(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["apikeys.idempotency_keys_purge"]
    assert entry["task"] == idempotency_keys_purge_task.name
    assert entry["schedule"] == 3600.0


def test_the_schema_documents_the_header_on_v1_posts():
    from django.urls import path
    from drf_spectacular.generators import SchemaGenerator

    from tests.urls_limits import KeysProbe

    schema = SchemaGenerator(patterns=[path("api/v1/_probe/keys", KeysProbe.as_view())]).get_schema(
        request=None, public=True)
    post = schema["paths"]["/api/v1/_probe/keys"]["post"]
    header = next(p for p in post["parameters"] if p["name"] == "Idempotency-Key")
    assert header["in"] == "header" and header["schema"]["maxLength"] == 255
    assert {"400", "409", "422", "429"} <= set(post["responses"])
    success = post["responses"]["201" if "201" in post["responses"] else "200"]
    assert "Idempotent-Replayed" in success["headers"]
    assert "Idempotent-Replayed" not in post["responses"]["429"]["headers"]


def test_unknown_paths_ignore_the_header(api, kit):
    r = api.post("/api/v1/nope", json={}, headers={**kit.auth("write"), "Idempotency-Key": "x" * 300})
    assert r.status_code == 404


def test_an_owner_is_gone_once_what_it_held_has_ended(db):
    """What ``apikeys.liveness`` looks at: on PostgreSQL the connection that claimed the key, on
    SQLite the process. A request of this process, on this connection, runs."""
    from apikeys import liveness

    assert not liveness.owner_gone(liveness.current_owner())
    if connection.vendor == "postgresql":
        with psycopg.connect(**connection.get_connection_params()) as other:
            owner = f"pg:{other.info.backend_pid}"
            assert not liveness.owner_gone(owner)
        deadline = time.monotonic() + 10  # the server ends the backend as the client leaves
        while not liveness.owner_gone(owner) and time.monotonic() < deadline:
            time.sleep(0.05)
    else:
        # A process of this host that has exited, marked as a request of its own would be.
        child = subprocess.run(
            [sys.executable, "-c", "import django; django.setup(); from apikeys import liveness; "
                             "print(liveness.current_owner())"],
            capture_output=True, text=True, check=True, cwd=settings.BASE_DIR,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"})
        owner = child.stdout.strip()
        assert owner.startswith("os:") and owner != liveness.current_owner()
    assert liveness.owner_gone(owner)
    assert not liveness.owner_gone("")  # a record from before owners: the lock decides
