"""The error envelope of each surface, for every kind of failure."""

import logging

import pytest
from django.test import override_settings

V1_KEYS = {"code", "message", "doc_url"}


def _v1_error(r, status, code):
    assert r.status_code == status, r.content
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["error"]
    assert set(error) >= V1_KEYS
    assert error["code"] == code
    assert error["doc_url"] == f"https://testserver/docs/errors#{code}"
    return error


def _legacy_error(r, status):
    assert r.status_code == status, r.content
    assert set(r.json()) == {"error"}
    assert isinstance(r.json()["error"], str) and r.json()["error"]
    return r.json()["error"]


@pytest.mark.parametrize("path", ["/api/v1/nope", "/api/v1/leads/x/y/z", "/api/v1", "/api/v1/"])
def test_unknown_v1_routes_are_404_in_the_v1_envelope(api, path):
    _v1_error(api.get(path), 404, "not_found")
    _v1_error(api.post(path, json={}), 404, "not_found")


@pytest.mark.parametrize("path", ["/api/nope", "/api/leads/x/y/z", "/api"])
def test_unknown_legacy_routes_are_404_in_the_legacy_envelope(api, path):
    _legacy_error(api.get(path), 404)


def test_wrong_method(api, kit):
    error = _v1_error(api.delete("/api/v1/users", headers=kit.auth("admin")), 405, "invalid_request")
    assert "DELETE" in error["message"]
    _legacy_error(api.request("PUT", "/api/admin/auth", headers=kit.auth("admin"), json={}), 405)


@pytest.fixture
def probes(settings):
    settings.ROOT_URLCONF = "tests.urls_probe"


def test_malformed_json_is_400_invalid_request(api, kit, probes):
    r = api.post("/api/v1/_probe", headers={**kit.auth("write"), "Content-Type": "application/json"},
                 content=b'{"message": ')
    error = _v1_error(r, 400, "invalid_request")
    assert error["details"] == []
    assert "JSON" in error["message"]
    r = api.post("/api/admin/auth", headers={"Content-Type": "application/json"}, content=b"{nope")
    assert "JSON" in _legacy_error(r, 400)


def test_unsupported_media_type_is_415(api, kit, probes):
    r = api.post("/api/v1/_probe", headers={**kit.auth("write"), "Content-Type": "text/plain"},
                 content=b"hello")
    _v1_error(r, 415, "invalid_request")
    r = api.post("/api/admin/auth", headers={"Content-Type": "application/xml"}, content=b"<a/>")
    _legacy_error(r, 415)


def test_oversize_body_is_413(api, kit, probes, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    r = api.post("/api/v1/_probe", headers=kit.auth("write"), json={"x": "a" * 4096})
    _v1_error(r, 413, "invalid_request")
    r = api.post("/api/_probe", json={"x": "a" * 4096})
    _legacy_error(r, 413)
    # Under the limit the same request goes through.
    r = api.post("/api/v1/_probe", headers=kit.auth("write"), json={"x": "a" * 100})
    assert r.status_code == 200 and r.json() == {"received": {"x": "a" * 100}}


def test_unexpected_exceptions_are_500_without_a_trace_and_logged(api, kit, probes, caplog):
    with caplog.at_level(logging.ERROR, logger="salesagent.api"):
        r = api.get("/api/v1/_probe", headers=kit.auth("read"))
    error = _v1_error(r, 500, "internal_error")
    request_id = r.headers["X-Request-Id"]
    assert error["requestId"] == request_id and request_id in error["message"]
    assert "hunter2" not in r.text and "Traceback" not in r.text
    assert any("hunter2" in (rec.exc_text or str(rec.exc_info)) for rec in caplog.records)
    assert any(request_id in rec.getMessage() for rec in caplog.records)

    r = api.get("/api/_probe")
    assert "hunter2" not in _legacy_error(r, 500)


@pytest.mark.parametrize(("kind", "status", "code", "message"), [
    ("not-found", 404, "not_found", "The requested resource does not exist."),
    ("not-acceptable", 406, "invalid_request", "Could not satisfy the request Accept header."),
    ("throttled", 429, "rate_limit_exceeded", "Too many requests."),
    ("denied", 403, "forbidden", "You do not have permission to do this."),
    ("suspicious", 400, "invalid_request", "The request was rejected as malformed."),
    ("teapot", 418, "invalid_request", "I am a teapot."),
    ("unavailable", 503, "internal_error", "The probe is down."),
])
def test_each_kind_of_exception_has_its_status_code_and_message(api, kit, probes, kind, status,
                                                                  code, message):
    error = _v1_error(api.get(f"/api/v1/_raise/{kind}", headers=kit.auth("read")), status, code)
    assert error["message"] == message
    assert _legacy_error(api.get(f"/api/_raise/{kind}"), status) == message


def test_a_throttled_request_says_when_to_come_back(api, kit, probes):
    r = api.get("/api/v1/_raise/throttled", headers=kit.auth("read"))
    assert r.json()["retryAfter"] == 7 and r.json()["error"]["retryAfter"] == 7
    assert r.headers["Retry-After"] == "7" and r.headers["X-RateLimit-RetryAfter"] == "7"


def test_every_response_carries_a_request_id(api):
    r = api.get("/api/health")
    assert r.headers["X-Request-Id"].startswith("req_")
    r = api.get("/api/health", headers={"X-Request-Id": "lb-1234567890"})
    assert r.headers["X-Request-Id"] == "lb-1234567890"
    r = api.get("/api/health", headers={"X-Request-Id": "bad id\nwith newline"[:10]})
    assert r.headers["X-Request-Id"].startswith("req_")


def test_v1_validation_errors_carry_field_details(api, kit):
    r = api.get("/api/v1/users?limit=500&page=x", headers=kit.auth("read"))
    error = _v1_error(r, 400, "invalid_request")
    assert sorted((d["field"], d["code"]) for d in error["details"]) == [
        ("limit", "out_of_range"), ("page", "invalid_format")]
    assert all(d["message"] for d in error["details"])


def test_error_reference_page_is_served(api):
    r = api.get("/docs/errors")
    assert r.status_code == 200
    for code in ("invalid_request", "unauthorized", "forbidden", "not_found", "conflict",
                 "unprocessable", "rate_limit_exceeded", "internal_error", "bad_gateway",
                 "service_unavailable", "gateway_timeout"):
        assert f'id="{code}"' in r.text


@override_settings(ALLOWED_HOSTS=["example.com"])
def test_disallowed_host_still_gets_an_envelope(api):
    r = api.get("/api/v1/users")
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_request"


DEAD_REDIS = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": "redis://127.0.0.1:1/0"}}


@pytest.fixture(autouse=True)
def _stop_probing_the_dead_database():
    """The database-down probe opens the breaker of a server that never comes back (port 1),
    whose probe would try it every second for the rest of the run."""
    yield
    from config.postgresql.base import _shared

    _shared({"HOST": "127.0.0.1", "PORT": "1"})[0].succeeded()


@pytest.mark.parametrize(("kind", "component"), [
    ("database-down", "database"), ("cache-down", "cache or task queue"),
    ("broker-down", "cache or task queue")])
@override_settings(CACHES=DEAD_REDIS)
def test_a_server_that_cannot_be_reached_is_503_with_retry_after(api, kit, probes, kind,
                                                                 component, caplog):
    """The database, the cache or the broker gone: 503 on both surfaces, with Retry-After, never
    a 500 or the error's internals (docs/security.md, "Under faults")."""
    with caplog.at_level(logging.WARNING, logger="salesagent.api"):
        r = api.get(f"/api/v1/_raise/{kind}", headers=kit.auth("read"))
    error = _v1_error(r, 503, "service_unavailable")
    assert r.headers["Retry-After"] == "5"
    assert error["message"] == (f"The service is temporarily unavailable: its {component} "
                                "cannot be reached. Retry in 5 seconds.")
    assert "127.0.0.1" not in r.text and "Traceback" not in r.text
    assert any("Answered 503" in rec.getMessage() for rec in caplog.records)

    r = api.get(f"/api/_raise/{kind}")
    assert _legacy_error(r, 503) == error["message"]
    assert r.headers["Retry-After"] == "5"


@override_settings(CACHES=DEAD_REDIS)
def test_outside_the_api_views_too(api, probes):
    """A failure that escapes every view (here a plain Django view) reaches Django's handler500,
    which answers with the envelope of the failure being handled: 503, not 500."""
    r = api.get("/api/v1/_plain/database-down")
    _v1_error(r, 503, "service_unavailable")
    assert r.headers["Retry-After"] == "5"
    r = api.get("/api/_plain/cache-down")
    assert _legacy_error(r, 503).startswith("The service is temporarily unavailable: its cache")


@pytest.mark.parametrize(("kind", "component"), [
    ("database-down", "database"), ("cache-down", "cache or task queue"),
    ("broker-down", "cache or task queue")])
@override_settings(CACHES=DEAD_REDIS)
def test_a_page_whose_server_cannot_be_reached_is_the_503_page(api, probes, kind, component,
                                                                caplog):
    """A dashboard page (any page outside the API) whose database, cache or broker is gone
    answers a 503 page of its own, in the dashboard's style, with Retry-After: never Django's
    plain 500 (docs/security.md, "Under faults"; tests/config/test_dead_connections.py shows it
    on a live daphne during an outage of PostgreSQL)."""
    with caplog.at_level(logging.WARNING, logger="salesagent.outages"):
        r = api.get(f"/dashboard/_plain/{kind}")
    assert r.status_code == 503
    assert r.headers["Retry-After"] == "5"
    assert r.headers["Content-Type"].startswith("text/html")
    assert "<h1>Temporarily unavailable</h1>" in r.text
    assert f"cannot reach its {component} right now" in r.text
    assert "Please try again in 5 seconds." in r.text
    assert '<link rel="stylesheet" href="/static/dashboard/dashboard.css">' in r.text
    assert "127.0.0.1" not in r.text and "Traceback" not in r.text
    # Logged once, as a warning, as the API's 503s are: not as Django's error with a traceback.
    assert [rec.levelname for rec in caplog.records
            if "Answered the 503 page" in rec.getMessage()] == ["WARNING"]
    assert not [rec for rec in caplog.records
                if rec.name == "django.request" and rec.levelno >= logging.ERROR]


def test_a_page_that_fails_otherwise_is_still_a_500(api, probes):
    r = api.get("/dashboard/_plain/a-bug-of-the-view")
    assert r.status_code == 500
    assert "Temporarily unavailable" not in r.text and "Retry-After" not in r.headers
