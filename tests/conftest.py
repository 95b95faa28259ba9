"""Fixtures shared by the whole suite.

``api`` sends real HTTP requests through the project's ASGI application (``config.asgi``), with
every middleware, as daphne would run it.
"""

from __future__ import annotations

import json as jsonlib
import logging
import os
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from . import openapi
from .factories import PASSWORD, TenantKit, make_tenant


class ApiClient:
    """A synchronous facade over httpx + ASGITransport; runs the ASGI app in-process."""

    validate_schema = True

    def __init__(self, base_url: str = "https://testserver"):
        from config.asgi import application

        self.base_url = base_url
        self._transport = httpx.ASGITransport(app=application)
        self.cookies = httpx.Cookies()

    def request(self, method: str, path: str, *, json: Any = None, headers: dict | None = None,
                content: bytes | str | None = None, base_url: str | None = None,
                **kwargs) -> httpx.Response:
        async def send() -> httpx.Response:
            async with httpx.AsyncClient(transport=self._transport,
                                         base_url=base_url or self.base_url,
                                         cookies=self.cookies) as client:
                response = await client.request(method, path, json=json, headers=headers,
                                                content=content, **kwargs)
                self.cookies.update(response.cookies)
                return response

        response = async_to_sync(send)()
        if self.validate_schema:
            openapi.validate(response)
        return response

    def get(self, path: str, **kw) -> httpx.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw) -> httpx.Response:
        return self.request("POST", path, **kw)

    def patch(self, path: str, **kw) -> httpx.Response:
        return self.request("PATCH", path, **kw)

    def delete(self, path: str, **kw) -> httpx.Response:
        return self.request("DELETE", path, **kw)


logging.getLogger("httpx").setLevel(logging.WARNING)


# Fixtures that start a server (on 127.0.0.1, in a thread of this process): the tests that use
# them are ``live`` like those that start processes, so ``-m "not live"`` leaves them out.
SERVER_FIXTURES = frozenset({"fake_server", "fake", "receiver", "tls_receiver", "smtp_server",
                             "smtp", "radicale", "local_model", "local_embedding_model",
                             "broken_broker"})
# Fixtures that need the local-model extra (tests/local_model.py).
LOCAL_MODEL_FIXTURES = frozenset({"local_model", "local_embedding_model"})


def pytest_collection_modifyitems(config, items):
    from . import local_model

    model_missing = None
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if SERVER_FIXTURES.intersection(fixtures):
            item.add_marker(pytest.mark.live)
        if LOCAL_MODEL_FIXTURES.intersection(fixtures):
            if model_missing is None:
                model_missing = not local_model.installed()
            if model_missing:
                # A mark, not a skip inside the fixture: pytest folds the skips of marks into
                # one line of its summary, however many tests there are.
                item.add_marker(pytest.mark.skip(reason=local_model.NOT_INSTALLED))


def pytest_configure(config):
    # Staff passwords are hashed with PBKDF2's million rounds: half a second per hash, and the
    # suite signs people in hundreds of times. What the tests check is the sign-in, not the
    # hash's cost. (Servers the tests start run with the project's own hashers.)
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # With Redis, the xdist workers share one database: each keeps its rate-limit counters under
    # a prefix of its own, or one worker's clearing (``_no_requests_counted_yet``) wipes the
    # counters of a test running on the other (the caches are built later, on first use).
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    cache = settings.CACHES["default"]
    if worker and cache["BACKEND"].endswith("RedisCache"):
        cache["KEY_PREFIX"] = f"{cache.get('KEY_PREFIX') or 'salesagent'}-{worker}"


@pytest.fixture(autouse=True, scope="session")
def _keep_test_connection_open():
    # As Django's own test client does: the test's transaction must outlive each request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True, scope="session")
def _agent_models_loaded():
    # As a web process loads them at start-up (config.serving.warm_up_the_agent): a test's first
    # chat turn must not pay for them inside its deadline.
    from agent.interface import warm_up

    warm_up()


@pytest.fixture
def api(db) -> ApiClient:
    return ApiClient()


@pytest.fixture
def kit(db) -> TenantKit:
    return make_tenant("Acme Inc")


@pytest.fixture
def stranger(db) -> TenantKit:
    """Another tenant, who should never see or touch ``kit``'s data."""
    return make_tenant("Stranger Corp")


def body(response: httpx.Response) -> Any:
    return jsonlib.loads(response.content)


@pytest.fixture(autouse=True)
def _no_requests_counted_yet():
    """Every test starts with empty rate-limit counters: all tests come from the same client
    address, and one test's requests must not use up the next one's budget."""
    from config.ratelimit import get_store

    get_store().clear()


class Clock:
    """The rate limiter's clock, frozen until a test moves it."""

    # A minute boundary (1_800_000_000 is divisible by 60), plus a little.
    START = 1_800_000_000 + 10.25

    def __init__(self) -> None:
        self.time = self.START

    def __call__(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    frozen = Clock()
    monkeypatch.setattr("config.ratelimit.core.now", frozen)
    return frozen


@pytest.fixture(scope="module")
def fake_server():
    """An OpenAI-compatible server on 127.0.0.1 (tests/fakes/openai_server.py)."""
    from .fakes.openai_server import FakeOpenAI

    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture(scope="session")
def local_model():
    """The base URL of a real model on a local llama.cpp server (tests/local_model.py), one
    server for the session. Without the local-model extra, the tests that use it are skipped
    (``pytest_collection_modifyitems``) with one message, the one permitted skip, saying how to
    install it."""
    from . import local_model as model

    with model.serve(n_ctx=2048) as base_url:
        yield base_url


@pytest.fixture(scope="session")
def local_embedding_model():
    """The base URL of a second llama.cpp server with the same model, started with
    ``--embedding``: its ``/v1/embeddings`` serves the model's (mean-pooled) embeddings, which a
    server in embedding mode serves instead of completions. Skipped as ``local_model`` is."""
    from . import local_model as model

    with model.serve(n_ctx=2048, embedding=True) as base_url:
        yield base_url


@pytest.fixture
def fake(fake_server, kit, settings):
    """``kit``'s tenant on the OpenAI provider, talking to ``fake_server``."""
    from tenants.services import tenant_set_agent

    settings.AGENT_MAX_RETRIES = 0
    settings.AGENT_TIMEOUT_SECONDS = 5
    fake_server.reset()
    tenant_set_agent(tenant=kit.tenant, provider="openai", model="fake-model",
                     api_key="sk-provider-secret", base_url=fake_server.base_url)
    return fake_server


@pytest.fixture
def manager(kit):
    """A manager of ``kit``'s tenant (signs in with ``PASSWORD``)."""
    from tenants.services import user_create

    return user_create(tenant=kit.tenant, email="mia@acme.test", first_name="Mia",
                       role="manager", password=PASSWORD)


@pytest.fixture
def rep(kit):
    """A rep of ``kit``'s tenant (signs in with ``PASSWORD``)."""
    from tenants.services import user_create

    return user_create(tenant=kit.tenant, email="ray@acme.test", first_name="Ray",
                       password=PASSWORD)


@pytest.fixture
def eager_celery():
    """Tasks run inline when enqueued, as a worker would run them (no broker needed)."""
    from config.celery import app as celery_app

    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture(scope="module")
def smtp_server():
    """A real SMTP server (aiosmtpd) on 127.0.0.1 (tests/fakes/smtp_server.py)."""
    from .fakes.smtp_server import SmtpServer

    server = SmtpServer()
    yield server
    server.close()


@pytest.fixture
def smtp(smtp_server, settings):
    """Django's email framework sends over SMTP to ``smtp_server``, as in production."""
    smtp_server.reset()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp_server.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 5
    return smtp_server


class EmailQueue(list):
    """The ids of the emails that went to the broker; with ``sending``, also really enqueued."""

    sending = False


@pytest.fixture(autouse=True)
def email_queue(monkeypatch) -> EmailQueue:
    """Records the emails enqueued after a commit instead of sending them to the broker (as
    webhooks' ``enqueued`` does): tests send them with ``send_emails`` or attempt them."""
    from conversations.services import emails

    queue = EmailQueue()
    real = emails.enqueue

    def record(ids) -> None:
        ids = list(ids)
        queue.extend(ids)
        if queue.sending:
            real(ids)

    monkeypatch.setattr(emails, "enqueue", record)
    return queue


@pytest.fixture
def send_emails(email_queue, eager_celery) -> EmailQueue:
    """Emails are enqueued for real, and the Celery task runs inline as a worker would run it."""
    email_queue.sending = True
    return email_queue


@pytest.fixture
def radicale(tmp_path):
    """A real CalDAV server on 127.0.0.1 (tests/fakes/radicale.py), stopped after the test."""
    from .fakes.radicale import Radicale

    server = Radicale(tmp_path)
    server.start()
    yield server
    server.stop()


def forget_free_busy() -> None:
    """Empties the free/busy cache of every calendar connection, and nothing else of the cache:
    ``cache.clear()`` would also empty the rate limiter's counters under a test running beside
    this one (the workers of ``pytest -n`` share one Redis database)."""
    from django.core.cache import cache
    from django.utils import timezone

    from calendars.availability import cache_key, window
    from calendars.models import CalendarConnection

    start, _end = window(timezone.now())
    cache.delete_many([cache_key(connection, start)
                       for connection in CalendarConnection.objects.all()])


@pytest.fixture
def local_calendars(db, settings):
    """Radicale listens on 127.0.0.1 over plain HTTP: calendar URLs may, for this test only. The
    free/busy cache starts and ends empty."""
    settings.CALENDARS_ALLOW_HTTP = True
    settings.CALENDARS_ALLOW_PRIVATE_TARGETS = True
    forget_free_busy()
    yield settings
    forget_free_busy()


# The production broker's options (config/settings, Redis; tests/config/test_settings.py).
REDIS_BROKER_OPTIONS = {"socket_connect_timeout": 1, "socket_timeout": 2}


def _reset_broker_pools() -> None:
    from config.celery import app as celery_app

    # The app keeps its broker connections and producers; another broker needs new ones.
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture
def broken_broker():
    """The project's Celery app publishes through a TCP proxy (tests/fakes/tcp_proxy.py), with
    the production broker's options; the test tells it to refuse or to blackhole. The app, its
    pools and the broker's breaker (core.broker) are as they were after."""
    from config.celery import app as celery_app
    from core import broker

    from .fakes.tcp_proxy import TcpProxy

    proxy = TcpProxy("127.0.0.1", 1)  # nothing behind it: it only ever refuses or blackholes
    conf = celery_app.conf
    saved = {name: conf[name] for name in
             ("broker_url", "broker_transport", "broker_transport_options")}
    conf.update(broker_url=f"redis://127.0.0.1:{proxy.port}/0", broker_transport=None,
                broker_transport_options=REDIS_BROKER_OPTIONS)
    _reset_broker_pools()
    yield proxy
    proxy.close()
    conf.update(saved)
    _reset_broker_pools()
    broker.breaker.succeeded()
