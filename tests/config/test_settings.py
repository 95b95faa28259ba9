"""Settings come from the environment and fail loudly on bad values (checked in fresh processes)."""

import json
import os
import subprocess
import sys

import pytest

from tests import live

pytestmark = pytest.mark.live  # fresh Python processes

ROOT = live.ROOT
_CLEAN = {k: v for k, v in os.environ.items()
          if k not in {"DATABASE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS",
                       "CORS_ALLOWED_ORIGINS", "TRUST_X_FORWARDED_PROTO", "V1_REQUIRE_HTTPS"}}

PROBE = """
import json, django
from django.conf import settings
django.setup()
from django.db import connection
out = {
    "debug": settings.DEBUG,
    "engine": settings.DATABASES["default"]["ENGINE"],
    "conn_max_age": settings.DATABASES["default"]["CONN_MAX_AGE"],
    "cache": settings.CACHES["default"]["BACKEND"],
    "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "broker": settings.CELERY_BROKER_URL,
    "broker_transport": settings.CELERY_BROKER_TRANSPORT,
    "db_options": {k: v for k, v in settings.DATABASES["default"].get("OPTIONS", {}).items()
                   if k in ("connect_timeout", "pool", "options", "prepare_threshold")},
    "broker_options": settings.CELERY_BROKER_TRANSPORT_OPTIONS,
    "https": settings.V1_REQUIRE_HTTPS,
    "proxy": list(getattr(settings, "SECURE_PROXY_SSL_HEADER", None) or []),
    "cors": settings.CORS_ALLOWED_ORIGINS,
    "hosts": settings.ALLOWED_HOSTS,
}
if connection.vendor == "sqlite":
    with connection.cursor() as c:
        c.execute("PRAGMA journal_mode")
        out["journal"] = c.fetchone()[0]
        c.execute("PRAGMA busy_timeout")
        out["busy_timeout"] = c.fetchone()[0]
print(json.dumps(out))
"""


def settings_in(tmp_path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**_CLEAN, "DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(tmp_path), **env},
    )


def test_embedded_default(tmp_path):
    proc = settings_in(tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["debug"] is True
    assert out["engine"] == "django.db.backends.sqlite3"
    assert out["journal"] == "wal" and out["busy_timeout"] >= 5000
    assert out["conn_max_age"] == 0
    assert out["cache"].endswith("LocMemCache")
    assert out["layer"] == "channels.layers.InMemoryChannelLayer"
    # The SQLite broker in VAR_DIR (config/broker.py), not kombu's filesystem transport.
    assert out["broker"] == f"sqlite:///{tmp_path / 'celery' / 'broker.sqlite3'}"
    assert out["broker_transport"] == "config.broker:Transport"
    assert out["https"] is False  # plain HTTP on localhost for the quickstart
    assert (tmp_path / "secret_key").exists()
    # The generated secret is kept: every process of the embedded default shares it.
    assert settings_in(tmp_path).returncode == 0
    assert (tmp_path / "secret_key").stat().st_mode & 0o077 == 0


def test_production_configuration(tmp_path):
    proc = settings_in(
        tmp_path,
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/salesagent",
        REDIS_URL="redis://127.0.0.1:6379/3",
        SECRET_KEY="s3cret", ALLOWED_HOSTS="api.example.com,.example.org",
        CORS_ALLOWED_ORIGINS="https://shop.example.com", TRUST_X_FORWARDED_PROTO="1",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["debug"] is False
    # Django's backend, failing at once while the server cannot be reached (config/postgresql).
    assert out["engine"] == "config.postgresql"
    # Nothing waits for ever on a server that accepts connections and never answers.
    assert out["db_options"]["connect_timeout"] == 3
    assert out["db_options"]["pool"]["timeout"] == 1  # one slice of the wait
    # No JIT compiling for a request's statements of milliseconds (docs/deploy.md).
    assert out["db_options"]["options"] == "-c jit=off"
    # The hottest statements are prepared from their second run (core.sql.prepared_cursor).
    assert out["db_options"]["prepare_threshold"] == 1
    options = out["broker_options"]
    assert (options["socket_connect_timeout"], options["socket_timeout"]) == (1, 2)
    # Idle connections are checked before use and kept alive (tests/config/test_redis_health.py).
    assert options["health_check_interval"] == 15 and options["socket_keepalive"] is True
    assert out["cache"] == "django.core.cache.backends.redis.RedisCache"
    assert out["layer"] == "channels_redis.core.RedisChannelLayer"
    assert out["broker"] == "redis://127.0.0.1:6379/3"
    assert out["broker_transport"] is None  # the URL's scheme: Redis
    assert out["https"] is True
    assert out["proxy"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert out["cors"] == ["https://shop.example.com"]
    assert out["hosts"] == ["api.example.com", ".example.org"]


def test_prepared_statements_can_be_turned_off_for_a_pooler(tmp_path):
    proc = settings_in(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:5432/salesagent",
                       DEBUG="1", DB_PREPARED_STATEMENTS="0")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["db_options"]["prepare_threshold"] is None


@pytest.mark.parametrize(
    "env, complaint",
    [
        ({"DEBUG": "maybe"}, "DEBUG must be one of"),
        ({"DATABASE_URL": "mysql://root@localhost/x"}, "DATABASE_URL must start with"),
        ({"REDIS_URL": "http://localhost:6379"}, "REDIS_URL must start with"),
        ({"DEBUG": "0", "ALLOWED_HOSTS": "x"}, "SECRET_KEY must be set"),
        ({"DEBUG": "0", "SECRET_KEY": "x"}, "ALLOWED_HOSTS must be set"),
        ({"MAX_REQUEST_BODY_BYTES": "lots"}, "MAX_REQUEST_BODY_BYTES must be an integer"),
        ({"TRUST_X_FORWARDED_PROTO": "sure"}, "TRUST_X_FORWARDED_PROTO must be one of"),
    ],
)
def test_bad_values_stop_the_process(tmp_path, env, complaint):
    proc = settings_in(tmp_path, **env)
    assert proc.returncode != 0
    assert "ImproperlyConfigured" in proc.stderr and complaint in proc.stderr


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                    reason="PostgreSQL's JIT (CI runs the suite on PostgreSQL too)")
def test_the_service_s_postgresql_connections_compile_nothing(db):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("off",)
