"""Settings of the service, read from the environment.

With nothing set, the service runs on its embedded default: SQLite under ``var/``, a local
memory cache, an in-memory channel layer and Celery on a SQLite file (config/broker.py). With
``DATABASE_URL`` and ``REDIS_URL`` it runs on PostgreSQL and Redis. See README.md,
"Configuration".
"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

import dj_database_url
from corsheaders.defaults import default_headers as default_cors_headers
from django.core.exceptions import ImproperlyConfigured
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

from .env import env_bool, env_int, env_list, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("VAR_DIR") or BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DATABASE_URL = env_url("DATABASE_URL", schemes=("postgres", "postgresql", "sqlite"))
REDIS_URL = env_url("REDIS_URL", schemes=("redis", "rediss"))
# The embedded default (no DATABASE_URL) is a developer's machine: DEBUG on unless said otherwise.
DEBUG = env_bool("DEBUG", default=not DATABASE_URL)


def _secret_key() -> str:
    if key := env_str("SECRET_KEY"):
        return key
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    # One key for every process of the embedded default (web, worker, commands), kept in var/.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()

ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else []
)
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DEBUG is off")

INSTALLED_APPS = [
    "daphne",
    # The admin site asks for the second factor too (dashboard/admin_site.py).
    "dashboard.admin_config.AdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "corsheaders",
    "csp",
    "channels",
    "config",
    "core",
    "tenants",
    "apikeys",
    "leads",
    "agent",
    "conversations",
    "knowledge",
    "analytics",
    "webhooks",
    "widget",
    "dashboard",
    "calendars",
    "integrations",
    "privacy",
    # Optional TOTP two-factor sign-in for the staff, with backup codes (docs/dashboard.md,
    # "Accounts").
    "django_otp",
    "django_otp.plugins.otp_totp",
    "django_otp.plugins.otp_static",
]

MIDDLEWARE = [
    # First, so that a request's time is the whole chain's; absent while METRICS_TOKEN is unset.
    "config.metrics.RequestMetricsMiddleware",
    # Then: every answer, those of the middleware below included, has its X-Request-Id, and
    # every line logged on the way carries it (docs/operations.md, "Logs and traces").
    "config.middleware.RequestIdMiddleware",
    "config.api.input.QueryTextMiddleware",  # a NUL reaches no query of any middleware
    "tenants.cors.WidgetOriginsMiddleware",  # before CorsMiddleware: it answers its question
    "corsheaders.middleware.CorsMiddleware",
    # Django's middleware, wrapped so as to cost no thread hop where they have nothing to do
    # (config/middleware.py); in Django's order.
    "config.middleware.SecurityHeadersMiddleware",
    "config.middleware.PagesSessionMiddleware",
    "config.middleware.TrailingSlashMiddleware",
    "config.middleware.PagesCsrfMiddleware",
    "config.middleware.PagesAuthenticationMiddleware",
    "config.middleware.PagesMessageMiddleware",
    "config.middleware.FrameOptionsMiddleware",
    "config.middleware.PagesContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
AUTH_USER_MODEL = "tenants.User"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.context.presence",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------

# How long a request may wait for a pooled connection while the pool is busy (the server answers).
DB_POOL_TIMEOUT_SECONDS = env_int("DB_POOL_TIMEOUT_SECONDS", 30, minimum=1)
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
    if DATABASES["default"]["ENGINE"].endswith("postgresql"):
        # Django's backend, failing at once while the server cannot be reached (503), instead
        # of holding each request for the pool's timeout (config/postgresql/base.py).
        DATABASES["default"]["ENGINE"] = "config.postgresql"
        # A server that accepts connections and never answers (hung, or a network that drops
        # packets) costs a connection attempt this long at most (libpq's default: forever).
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
            "connect_timeout", env_int("DB_CONNECT_TIMEOUT_SECONDS", 3, minimum=2))
        # No JIT compilation: every statement of a request costs milliseconds, and PostgreSQL
        # compiles any whose estimate passes jit_above_cost, 20-25 ms of compiling for a search
        # whose walk takes 5 (docs/deploy.md).
        DATABASES["default"]["OPTIONS"].setdefault("options", "-c jit=off")
        # The hottest statements (core.sql.prepared_cursor: the API key's lookup, the lead
        # list's count and page) are prepared once per connection, from their second run:
        # PostgreSQL then neither parses nor plans them again. Django's own statements are
        # never prepared (client-side binding). Off for a pooler that cannot keep prepared
        # statements (PgBouncer before 1.21 in transaction mode; docs/deploy.md).
        DATABASES["default"]["OPTIONS"]["prepare_threshold"] = (
            1 if env_bool("DB_PREPARED_STATEMENTS", True) else None)
    if DATABASES["default"]["ENGINE"].endswith("postgresql") and env_bool("DB_POOL", True):
        # One psycopg pool per process: every request thread of daphne would otherwise hold a
        # connection of its own, and a few hundred concurrent streams exhaust the server's.
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": env_int("DB_POOL_MAX_SIZE", 20, minimum=1),
            # One slice of the wait: the backend waits DB_POOL_TIMEOUT_SECONDS in such slices,
            # checking between two that the server still answers.
            "timeout": 1,
        }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            "OPTIONS": {
                # WAL lets the web process, the worker and management commands write side by
                # side; IMMEDIATE transactions plus a busy timeout make writers queue rather
                # than fail with "database is locked".
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
        }
    }
# Under ASGI every request may run on another thread: persistent connections would leak.
DATABASES["default"]["CONN_MAX_AGE"] = 0
# A connection is checked before it is used: the pool's with a round trip before it lends one
# (psycopg_pool's ``check``, config/postgresql/base.py), a kept one (DB_POOL off) once per
# request or task. One that died while it waited (a restart, a failover, an outage the process
# slept through) is replaced instead of failing the request that gets it (docs/security.md,
# "Under faults").
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Celery workers' long-lived processes and threads keep theirs this long (config/celery.py).
WORKER_DB_CONN_MAX_AGE = env_int("WORKER_DB_CONN_MAX_AGE", 60, minimum=0)
IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
# Covering indexes (INCLUDE) are a PostgreSQL feature; SQLite builds the same indexes without
# the extra columns, which is what we want there.
SILENCED_SYSTEM_CHECKS = [
    "models.W040",
    # The admin looks for Django's session, sign-in and messages middleware by class; they are
    # in MIDDLEWARE wrapped (config/middleware.py), and the admin's tests sign in through them.
    "admin.E408", "admin.E409", "admin.E410",
]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis, cache, channel layer, Celery ----------------------------------------------------

# Every Redis client (the cache, the channel layer, the broker) checks a connection that waited
# idle this long with a PING before it sends a command on it, and keeps its connections alive
# with TCP keepalives, which also find, within about 30 s, one that died without a word (a
# NAT or a firewall that forgot it, a host gone). A connection found closed, by that PING or
# by a command, is made again once; a command that timed out is never sent again (it may have
# run). docs/security.md, "Under faults".
REDIS_HEALTH_CHECK_SECONDS = env_int("REDIS_HEALTH_CHECK_SECONDS", 15, minimum=1)
REDIS_KEEPALIVE = {
    "socket_keepalive": True,
    "socket_keepalive_options": {
        option: value for name, value in (("TCP_KEEPIDLE", 15), ("TCP_KEEPINTVL", 5),
                                          ("TCP_KEEPCNT", 3))
        if (option := getattr(socket, name, None)) is not None},
}
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "salesagent"),
            # Every API request asks the cache for its rate limits: a Redis that hangs must fail
            # fast (the limiter then fails open) instead of holding every request.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1,
                        "health_check_interval": REDIS_HEALTH_CHECK_SECONDS, **REDIS_KEEPALIVE,
                        "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))},
        }
    }
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # A Redis that stops answering must not hold a stream for ever: a stream's read
            # waits up to 5 s on the server (channels_redis's BZPOPMIN), its socket 10 s.
            "CONFIG": {"hosts": [{
                "address": REDIS_URL, "socket_connect_timeout": 1, "socket_timeout": 10,
                "health_check_interval": REDIS_HEALTH_CHECK_SECONDS, **REDIS_KEEPALIVE,
                "retry": AsyncRetry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            }]},
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT: str | None = None  # the URL's scheme says which
    # kombu waits for ever on a Redis that accepts connections and never answers: a publish
    # (after a commit, in a request) gives up after these instead (docs/security.md, "Under
    # faults"). The worker's own reads are BRPOPs of 1 s. kombu sends again a publish that
    # failed (CELERY_TASK_PUBLISH_RETRY_POLICY), on a new connection: no ``retry`` here.
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {
        "socket_connect_timeout": 1, "socket_timeout": 2,
        "health_check_interval": REDIS_HEALTH_CHECK_SECONDS, **REDIS_KEEPALIVE}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    # kombu's SQLAlchemy transport on a SQLite file of its own (config/broker.py): a message is
    # one row written in one transaction, so a worker never reads half of one, as it could from
    # the filesystem transport (docs/decisions.md, "The embedded default's broker").
    _broker_dir = VAR_DIR / "celery"
    _broker_dir.mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = f"sqlite:///{_broker_dir / 'broker.sqlite3'}"
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
    # Writers wait up to this long for SQLite's lock (a worker claiming, another process
    # enqueueing) instead of failing with "database is locked".
    CELERY_BROKER_TRANSPORT_OPTIONS = {"connect_args": {"timeout": 30}}

# Set by ``manage.py serve`` for its children: where it writes their states, which /api/health
# reports (config/management/commands/serve.py).
SERVE_STATE_FILE = env_str("SERVE_STATE_FILE")

CELERY_TASK_IGNORE_RESULT = True
# A publish tries twice (the second on a fresh connection, after a restart of the broker), not
# four times: a broker that is gone holds the request that finds out for two socket timeouts.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2,
                                    "interval_max": 0.2}
CELERY_TASK_ACKS_LATE = True
# A worker asked to stop (SIGTERM, a rolling deploy) finishes the tasks it runs and gives back
# the ones it had reserved; acknowledged late, a task whose worker dies before the end goes to
# the broker again. Which tasks are also given back when their process is killed
# (reject_on_worker_lost, in their decorators) is said in docs/deploy.md, "Workers".
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Periodic sweepers.
CELERY_BEAT_SCHEDULE: dict = {
    "expire-idle-conversations": {"task": "conversations.expire_idle", "schedule": 60.0},
    "apikeys.idempotency_keys_purge": {
        "task": "apikeys.tasks.idempotency_keys_purge", "schedule": 3600.0,
    },
    "sweep-webhook-deliveries": {"task": "webhooks.sweep", "schedule": 5.0},
    "catch-up-webhook-fan-out": {"task": "webhooks.catch_up", "schedule": 60.0},
    # Presence and routing (docs/dashboard.md, "Availability and routing").
    "presence-sweep": {"task": "tenants.presence_sweep", "schedule": 15.0},
    "offer-waiting-handoffs": {"task": "conversations.routing_sweep", "schedule": 30.0},
    # Chunks without a vector of the current embedding model (docs/knowledge.md).
    "reembed-chunks": {"task": "knowledge.reembed", "schedule": 60.0},
    # Erasures that wait (a lost task, a calendar to retry) and the tenants' retention
    # (docs/privacy.md).
    "privacy-sweep": {"task": "privacy.sweep", "schedule": 60.0},
    "privacy-retention": {"task": "privacy.retention", "schedule": 3600.0},
    # Bulk actions and imports whose task was lost; uploads never started (docs/dashboard.md).
    "leads-sweep": {"task": "leads.sweep", "schedule": 60.0},
}
CELERY_TIMEZONE = "UTC"

# --- HTTP, security, CORS -------------------------------------------------------------------

TRUST_X_FORWARDED_PROTO = env_bool("TRUST_X_FORWARDED_PROTO", False)
if TRUST_X_FORWARDED_PROTO:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The client address of per-address rate limits: REMOTE_ADDR, or the last X-Forwarded-For entry
# (the one the trusted proxy appended) when the service runs behind that proxy. A deployment that
# trusts the proxy for the scheme trusts it for the address too, unless told otherwise.
TRUST_X_FORWARDED_FOR = env_bool("TRUST_X_FORWARDED_FOR", TRUST_X_FORWARDED_PROTO)
# The v1 surface is HTTPS only; the embedded default (DEBUG) allows plain HTTP on localhost.
V1_REQUIRE_HTTPS = env_bool("V1_REQUIRE_HTTPS", not DEBUG)

CORS_ALLOWED_ORIGINS = env_list("CORS_ALLOWED_ORIGINS")
CORS_URLS_REGEX = r"^/(api|widget\.js).*$"
# Browsers may send Idempotency-Key and read the rate-limit and replay headers.
CORS_ALLOW_HEADERS = (*default_cors_headers, "idempotency-key")
CORS_EXPOSE_HEADERS = [
    "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Policy",
    "X-RateLimit-RetryAfter", "Retry-After", "Idempotent-Replayed", "X-Request-Id",
]
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

# Request bodies: JSON everywhere, with room for a base64 document on the knowledge base (a
# 10 MiB file is 13.4 MiB of base64).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BODY_BYTES", 14 * 1024 * 1024, minimum=1024)

# --- Internationalisation, static files -----------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

LOGIN_URL = "/admin/login/"

# Passwords the staff choose (accepting an invitation, a reset, My profile): Django's checks.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]


def _totp_issuer(device) -> str:
    """What an authenticator app names the entry: the tenant (django-otp's OTP_TOTP_ISSUER)."""
    return device.user.tenant.name if device.user.tenant_id else "Sales Agent"


OTP_TOTP_ISSUER = _totp_issuer
# The admin lists the staff's devices (an operator deletes a lost one) without their keys.
OTP_ADMIN_HIDE_SENSITIVE_DATA = True
# How long a password-reset link works (Django's default is three days).
PASSWORD_RESET_TIMEOUT = 60 * 60 * 2

from .api import *  # noqa: E402,F403
from .attachments import *  # noqa: E402,F403
from .csp import *  # noqa: E402,F403
from .knowledge import *  # noqa: E402,F403
from .limits import *  # noqa: E402,F403
from .logging import logging_settings  # noqa: E402

globals().update(logging_settings(DEBUG))

# Files through Django's storage API: the attachments' storage is a setting (docs/conversations.md).
STORAGES = attachment_storages(VAR_DIR)  # noqa: F405

# --- The agent ------------------------------------------------------------------------------

AGENT_TIMEOUT_SECONDS = env_int("AGENT_TIMEOUT_SECONDS", 30, minimum=1)
AGENT_MAX_RETRIES = env_int("AGENT_MAX_RETRIES", 2, minimum=0)
# How the builtin agent (and the deterministic net under a model) reads a message: "meaning", the
# rules and the examples' meaning (agent.understanding); "rules", the rules alone, as before
# issue 27 (kept for make bench's comparison of the two).
AGENT_UNDERSTANDING = env_str("AGENT_UNDERSTANDING", "meaning")
# Load the agent's models when a web process starts rather than at its first chat turn.
AGENT_WARM_UP = env_bool("AGENT_WARM_UP", True)

# How long a web process asked to stop (SIGTERM) waits for the requests in flight before it
# exits (config/shutdown.py; docs/deploy.md, "Rolling deploys"). Keep the process manager's own
# stop timeout (systemd's TimeoutStopSec, Kubernetes' terminationGracePeriodSeconds) above it.
SHUTDOWN_GRACE_SECONDS = env_int("SHUTDOWN_GRACE_SECONDS", 25, minimum=1)
# A web process opens its socket only once the agent's models are loaded (AGENT_WARM_UP), so
# that a proxy sends a process just started by a deploy no request it would hold meanwhile.
# Off by default: `make run` and a single process serve everything else at once.
LISTEN_AFTER_WARM_UP = env_bool("LISTEN_AFTER_WARM_UP", False)
if AGENT_UNDERSTANDING not in ("meaning", "rules"):
    raise ImproperlyConfigured(f"AGENT_UNDERSTANDING must be meaning or rules, not {AGENT_UNDERSTANDING!r}.")

# --- Webhooks (docs/webhooks.md) ------------------------------------------------------------

# Receivers' URLs must be https and resolve to public addresses; these lift the two rules for
# tests and local development only.
WEBHOOKS_ALLOW_HTTP = env_bool("WEBHOOKS_ALLOW_HTTP", False)
WEBHOOKS_ALLOW_PRIVATE_TARGETS = env_bool("WEBHOOKS_ALLOW_PRIVATE_TARGETS", False)
# How long a receiver has to answer, in seconds (the specification's 30).
WEBHOOKS_TIMEOUT_SECONDS = env_int("WEBHOOKS_TIMEOUT_SECONDS", 30, minimum=1)

# --- Reps' calendars (docs/calendars.md) ----------------------------------------------------

# CalDAV URLs must be https and resolve to public addresses, as webhook URLs; these lift the two
# rules for tests and for a calendar server on the service's own network (a home Radicale).
CALENDARS_ALLOW_HTTP = env_bool("CALENDARS_ALLOW_HTTP", False)
CALENDARS_ALLOW_PRIVATE_TARGETS = env_bool("CALENDARS_ALLOW_PRIVATE_TARGETS", False)
# One request to a calendar server may take this long; a chat turn waits at most this long for
# all of the reps' free/busy together, then offers from the availability table.
CALENDARS_TIMEOUT_SECONDS = env_int("CALENDARS_TIMEOUT_SECONDS", 2, minimum=1)
# How long a rep's free/busy (or the news that their calendar is down) is kept in the cache.
CALENDARS_FREEBUSY_SECONDS = env_int("CALENDARS_FREEBUSY_SECONDS", 60, minimum=1)
CELERY_BEAT_SCHEDULE["sweep-calendar-writes"] = {"task": "calendars.sweep", "schedule": 10.0}

# --- CRM integrations (docs/integrations.md) ------------------------------------------------

# A CRM's API base URL must be https and resolve to public addresses (core.outbound); these lift
# the two rules for tests and local stand-ins only.
INTEGRATIONS_ALLOW_HTTP = env_bool("INTEGRATIONS_ALLOW_HTTP", False)
INTEGRATIONS_ALLOW_PRIVATE_TARGETS = env_bool("INTEGRATIONS_ALLOW_PRIVATE_TARGETS", False)
# One request to a CRM may take this long.
INTEGRATIONS_TIMEOUT_SECONDS = env_int("INTEGRATIONS_TIMEOUT_SECONDS", 10, minimum=1)
# HubSpot: the API and the OAuth authorize page (a public app's client id and secret enable
# "Connect with HubSpot"; without them, managers connect with a private app's token).
HUBSPOT_API_BASE_URL = env_url("HUBSPOT_API_BASE_URL", schemes=("https", "http")) or \
    "https://api.hubapi.com"
HUBSPOT_AUTHORIZE_URL = env_url("HUBSPOT_AUTHORIZE_URL", schemes=("https", "http")) or \
    "https://app.hubspot.com/oauth/authorize"
HUBSPOT_CLIENT_ID = env_str("HUBSPOT_CLIENT_ID")
HUBSPOT_CLIENT_SECRET = env_str("HUBSPOT_CLIENT_SECRET")
if bool(HUBSPOT_CLIENT_ID) != bool(HUBSPOT_CLIENT_SECRET):
    raise ImproperlyConfigured("Set both HUBSPOT_CLIENT_ID and HUBSPOT_CLIENT_SECRET, or neither.")
CELERY_BEAT_SCHEDULE["sweep-crm-syncs"] = {"task": "integrations.sweep", "schedule": 10.0}
# What comes back from the CRMs (polling with a cursor) and stalled backfills: every minute.
CELERY_BEAT_SCHEDULE["poll-crms"] = {"task": "integrations.polls", "schedule": 60.0}

# --- The knowledge base ---------------------------------------------------------------------

CELERY_BEAT_SCHEDULE["knowledge-documents-sweep"] = {
    "task": "knowledge.sweep_stuck", "schedule": 300.0,
}

# --- Email and meeting links (docs/meetings.md) ---------------------------------------------

from .email import email_settings  # noqa: E402

globals().update(email_settings(VAR_DIR))
# Links in emails (a meeting's reschedule and cancel pages, the dashboard) start with this.
PUBLIC_BASE_URL = (env_str("PUBLIC_BASE_URL") or "http://127.0.0.1:8000").rstrip("/")
# How long the signed links of a meeting email work (the booking horizon is 21 days).
MEETING_LINK_MAX_AGE_DAYS = env_int("MEETING_LINK_MAX_AGE_DAYS", 45, minimum=1)
CELERY_BEAT_SCHEDULE["sweep-emails"] = {"task": "conversations.emails_sweep", "schedule": 15.0}

# --- Metrics (docs/operations.md) -----------------------------------------------------------

from .metrics import metrics_settings  # noqa: E402

globals().update(metrics_settings(VAR_DIR))
