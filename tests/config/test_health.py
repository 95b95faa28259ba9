"""GET /api/health: public, checks the database, the cache and the broker for real."""

import pytest
from django.test import override_settings

DEAD_REDIS = "redis://127.0.0.1:1/0"


def test_healthy(api, db):
    r = api.get("/api/health")
    assert r.status_code == 200
    data = r.json()
    assert data["status"] == "ok"
    assert set(data["components"]) == {"database", "cache", "broker"}
    assert all(c["status"] == "ok" and c["latencyMs"] >= 0 for c in data["components"].values())


def test_needs_no_authentication_and_ignores_bad_credentials(api, db):
    r = api.get("/api/health", headers={"Authorization": "Bearer sk_live_nonsense"})
    assert r.status_code == 200


@override_settings(CACHES={"default": {
    "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": DEAD_REDIS}})
def test_cache_down_is_503_naming_the_cache(api, db):
    r = api.get("/api/health")
    assert r.status_code == 503
    assert r.json()["error"] == "Unavailable: cache"
    assert r.json()["components"]["cache"]["status"] == "down"
    assert r.json()["components"]["database"]["status"] == "ok"
    assert "127.0.0.1" not in r.text  # the failure's kind, not its internals


@override_settings(CELERY_BROKER_URL=DEAD_REDIS, CELERY_BROKER_TRANSPORT=None,
                   CELERY_BROKER_TRANSPORT_OPTIONS={})
def test_broker_down_is_503_naming_the_broker(api, db):
    r = api.get("/api/health")
    assert r.status_code == 503
    assert r.json()["error"] == "Unavailable: broker"
    assert r.json()["components"]["broker"]["status"] == "down"


def test_a_sqlite_broker_that_cannot_be_opened_is_down(api, db, settings, tmp_path):
    """The SQLite broker opens its file only when used: the check asks it for the queue."""
    settings.CELERY_BROKER_URL = f"sqlite:///{tmp_path / 'missing-folder' / 'broker.sqlite3'}"
    r = api.get("/api/health")
    assert r.status_code == 503
    assert r.json()["error"] == "Unavailable: broker"
    assert r.json()["components"]["broker"] == {
        "status": "down", "error": "OperationalError",
        "latencyMs": r.json()["components"]["broker"]["latencyMs"]}


@pytest.mark.live  # daphne
def test_database_down_is_503_naming_the_database(tmp_path):
    """A real daphne whose database cannot be reached."""
    import httpx

    from tests.live import daphne

    env = {"DATABASE_URL": "postgres://postgres@127.0.0.1:1/nowhere", "REDIS_URL": "",
           "SECRET_KEY": "x", "ALLOWED_HOSTS": "127.0.0.1", "VAR_DIR": str(tmp_path)}
    with daphne(env) as base:
        r = httpx.get(f"{base}/api/health", timeout=20)
    assert r.status_code == 503
    assert r.json()["error"] == "Unavailable: database"
    assert r.json()["components"]["database"]["status"] == "down"
    assert r.json()["components"]["cache"]["status"] == "ok"
