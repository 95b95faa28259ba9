"""GET /api/health: public, checks the database, the cache and the broker for real; under
``manage.py serve``, also reports its worker and beat (tests/config/test_serve.py runs serve)."""

import json
import time

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
    settings.CELERY_BROKER_TRANSPORT = "config.broker:Transport"  # on Redis too (CI)
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"connect_args": {"timeout": 30}}
    r = api.get("/api/health")
    assert r.status_code == 503
    assert r.json()["error"] == "Unavailable: broker"
    assert r.json()["components"]["broker"] == {
        "status": "down", "error": "OperationalError",
        "latencyMs": r.json()["components"]["broker"]["latencyMs"]}


def _serve_state(path, *, updated_ago=0.0, **children) -> str:
    """A state file as ``manage.py serve`` writes it (config/management/commands/serve.py)."""
    running = {"running": True, "pid": 4242, "downSince": None, "restarts": 0, "lastExit": None}
    state = {"updatedAt": time.time() - updated_ago, "pid": 4141,
             "children": {"web": running, "worker": running, "beat": running, **children}}
    path.write_text(json.dumps(state))
    return str(path)


def test_under_serve_the_worker_and_beat_are_reported(api, db, settings, tmp_path):
    settings.SERVE_STATE_FILE = _serve_state(tmp_path / "serve.json")
    r = api.get("/api/health")
    assert r.status_code == 200
    data = r.json()
    assert data["status"] == "ok" and "degraded" not in data
    assert set(data["components"]) == {"database", "cache", "broker", "worker", "beat"}
    assert data["components"]["worker"]["status"] == "ok"
    assert data["components"]["worker"]["restarts"] == 0


def test_a_worker_down_for_a_while_is_degraded_and_named(api, db, settings, tmp_path):
    down = {"running": False, "pid": None, "downSince": time.time() - 30, "restarts": 4,
            "lastExit": "killed by SIGKILL"}
    settings.SERVE_STATE_FILE = _serve_state(tmp_path / "serve.json", worker=down)
    r = api.get("/api/health")
    assert r.status_code == 200  # the API serves; background work waits
    data = r.json()
    assert data["status"] == "degraded"
    assert data["degraded"] == ["worker"]
    worker = data["components"]["worker"]
    assert worker["status"] == "down" and worker["error"] == "killed by SIGKILL"
    assert worker["restarts"] == 4 and worker["downSince"].endswith("Z")
    assert data["components"]["beat"]["status"] == "ok"
    assert data["components"]["database"]["status"] == "ok"


def test_a_worker_being_restarted_is_not_yet_degraded(api, db, settings, tmp_path):
    restarting = {"running": False, "pid": None, "downSince": time.time() - 1, "restarts": 1,
                  "lastExit": "exited with status 1"}
    settings.SERVE_STATE_FILE = _serve_state(tmp_path / "serve.json", worker=restarting)
    r = api.get("/api/health")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"
    assert r.json()["components"]["worker"]["status"] == "restarting"


def test_a_silent_serve_is_degraded(api, db, settings, tmp_path):
    """serve rewrites its file every 2 s: an old one means nobody restarts anything."""
    settings.SERVE_STATE_FILE = _serve_state(tmp_path / "serve.json", updated_ago=60)
    r = api.get("/api/health")
    assert r.status_code == 200
    assert r.json()["status"] == "degraded" and r.json()["degraded"] == ["supervisor"]
    assert r.json()["components"]["supervisor"]["status"] == "down"
    assert "worker" not in r.json()["components"]


def test_unavailable_and_degraded_at_once(api, db, settings, tmp_path):
    # Both through the fixture: an override_settings decorator around it would be undone first,
    # and the fixture's teardown would then put back the dead cache it found on entering.
    settings.CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": DEAD_REDIS}}
    down = {"running": False, "pid": None, "downSince": time.time() - 30, "restarts": 0,
            "lastExit": "exited with status 1"}
    settings.SERVE_STATE_FILE = _serve_state(tmp_path / "serve.json", beat=down)
    r = api.get("/api/health")
    assert r.status_code == 503
    assert r.json()["error"] == "Unavailable: cache"  # only what makes the service unavailable
    assert r.json()["status"] == "unavailable" and r.json()["degraded"] == ["beat"]


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
