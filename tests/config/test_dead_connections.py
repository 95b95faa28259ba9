"""Pooled connections that died while the process was idle (issue 28, "Dead pooled connections
after an outage"; docs/security.md, "Under faults").

A live daphne with production settings (DEBUG off, the psycopg pool, Redis when ``REDIS_URL``
is set) reaches PostgreSQL through a TCP proxy (tests/fakes/tcp_proxy.py), so that an outage can
happen without touching the shared server. It serves a few requests at once (its pool grows to
several connections), then, idle, loses every connection: its backends are ended with
``pg_terminate_backend``, or the proxy goes down and comes back. The very next requests to the
API and to the dashboard must succeed: the pool checks a connection before lending it. And while
PostgreSQL cannot be reached, a dashboard page answers a 503 page of its own, in the dashboard's
style with ``Retry-After``, never Django's plain 500.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from tests.fakes.tcp_proxy import REFUSED, TcpProxy
from tests.live import daphne, manage, scratch_database

pytestmark = [
    pytest.mark.live,  # daphne and a TCP proxy
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="set DATABASE_URL (PostgreSQL): these are a PostgreSQL server's connections and "
               "outages; the embedded SQLite has neither (CI runs the suite on PostgreSQL too)",
    ),
]

# An answer slower than this after the connections died is no recovery (seconds).
PROMPT = 1.5


@dataclass
class Stack:
    base: str
    database: str  # the scratch database, reached directly (not through the proxy)
    proxy: TcpProxy
    api: dict[str, str]  # the Authorization header of an admin key
    cookie: str  # the Cookie header of a dashboard session (admin token)
    log: str  # daphne's output


def _through(url: str, port: int) -> str:
    """``url`` with 127.0.0.1:``port`` (the proxy) as its host, credentials kept."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    return parts._replace(netloc=f"{credentials}@127.0.0.1:{port}" if credentials
                          else f"127.0.0.1:{port}").geturl()


def _dashboard_session(base: str, admin_token: str) -> str:
    """Signs in to the dashboard with the admin token; the Cookie header of that session. (Its
    cookies are Secure, as in production, and the server is plain HTTP: they are sent by hand.)"""
    with httpx.Client(base_url=base, timeout=30) as client:
        page = client.get("/dashboard/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        csrf = page.cookies["csrftoken"]
        r = client.post("/dashboard/login/token/", headers={"Cookie": f"csrftoken={csrf}"},
                        data={"token": admin_token, "csrfmiddlewaretoken": token})
        assert r.status_code == 302, r.text
        return f"csrftoken={csrf}; sessionid={r.cookies['sessionid']}"


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    var = tmp_path_factory.mktemp("dead_connections")
    with scratch_database(f"salesagent_dead_connections_{os.getpid()}") as database, \
            contextlib.ExitStack() as resources:
        target = urlsplit(database)
        proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
        resources.callback(proxy.close)
        env = {
            "DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(var),
            "DATABASE_URL": _through(database, proxy.port),
            # Production's Redis when the run has one (its cache then holds the rate limits).
            "REDIS_URL": os.environ.get("REDIS_URL", ""),
            "CACHE_KEY_PREFIX": f"dead-connections-{uuid.uuid4().hex[:8]}",
            "DEBUG": "0", "SECRET_KEY": "dead-connections-live-test",
            "ALLOWED_HOSTS": "127.0.0.1", "V1_REQUIRE_HTTPS": "0",
        }
        manage("migrate", "--noinput", env=env)
        created = json.loads(manage("create_tenant", "Idle Co", "--plan", "enterprise",
                                    "--json", env=env))
        server = resources.enter_context(daphne(env))
        yield Stack(base=server, database=database, proxy=proxy,
                    api={"Authorization": f"Bearer {created['keys']['live']['admin']}"},
                    cookie=_dashboard_session(server, created["adminToken"]), log=server.log)


def _api(stack: Stack) -> httpx.Response:
    return httpx.get(f"{stack.base}/api/v1/leads", headers=stack.api, timeout=30)


def _new_lead(stack: Stack) -> httpx.Response:
    n = uuid.uuid4().hex[:12]
    return httpx.post(f"{stack.base}/api/v1/leads", headers=stack.api, timeout=30,
                      json={"email": f"lead-{n}@idle.test", "name": f"Lead {n}"})


def _dashboard(stack: Stack, path: str = "/dashboard/") -> httpx.Response:
    return httpx.get(f"{stack.base}{path}", headers={"Cookie": stack.cookie}, timeout=30)


def _busy_moment(stack: Stack, requests: int = 6) -> None:
    """A few requests at once, as traffic brings: the pool grows to several connections, which
    then wait idle in it."""
    with ThreadPoolExecutor(requests) as pool:
        answers = list(pool.map(lambda i: _api(stack) if i % 2 else _dashboard(stack),
                                range(requests)))
    assert [r.status_code for r in answers] == [200] * requests, [r.text for r in answers]


def _terminate_backends(database: str) -> int:
    """Ends every backend of the server process's database (not this one's): what a restart, a
    failover or an idle-session timeout does to its pooled connections. Returns how many."""
    with psycopg.connect(database, autocommit=True) as conn:
        pids = [pid for (pid,) in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()")]
        for pid in pids:
            # Waits (up to 5 s) until the backend is gone.
            conn.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
    return len(pids)


def _timed(call, *args) -> tuple[httpx.Response, float]:
    sent = time.monotonic()
    response = call(*args)
    return response, time.monotonic() - sent


def _assert_serving(stack: Stack) -> None:
    """The very next requests, one after another, all succeed promptly: an API read, an API
    write and two dashboard pages."""
    for call, status in ((_api, 200), (_new_lead, 201), (_dashboard, 200),
                         (lambda s: _dashboard(s, "/dashboard/leads/"), 200)):
        response, took = _timed(call, stack)
        print(f"{response.request.method} {response.request.url.path}: "
              f"{response.status_code} in {took:.2f} s")
        assert response.status_code == status, (response.status_code, response.text[:500])
        assert took < PROMPT, f"{response.request.url} took {took:.1f} s"


def test_requests_after_every_connection_was_terminated_succeed(stack):
    _busy_moment(stack)
    time.sleep(0.5)  # idle
    assert _terminate_backends(stack.database) >= 2  # the pool had grown: several died
    _assert_serving(stack)


def test_requests_after_an_outage_the_process_slept_through_succeed(stack):
    _busy_moment(stack)
    # PostgreSQL goes away and comes back while no request arrives: every connection of the
    # pool is reset (the proxy's refused mode), and nothing notices until the next request.
    with stack.proxy.down(REFUSED):
        time.sleep(2)
    _assert_serving(stack)


def test_a_dashboard_page_during_an_outage_is_a_503_page_of_the_dashboards_own(stack):
    assert _dashboard(stack).status_code == 200
    with stack.proxy.down(REFUSED):
        pages = [_dashboard(stack, path) for path in ("/dashboard/", "/dashboard/leads/")]
        api = _api(stack)
    for page in pages:
        assert page.status_code == 503, (page.status_code, page.text[:500])
        assert page.headers["Retry-After"].isdigit()
        assert page.headers["Content-Type"].startswith("text/html")
        assert "temporarily unavailable" in page.text.lower()
        assert "try again" in page.text.lower()
        assert "dashboard/dashboard.css" in page.text  # the dashboard's own style
        assert "Server Error (500)" not in page.text and "Traceback" not in page.text
    # The API keeps its envelope.
    assert api.status_code == 503 and api.json()["error"]["code"] == "service_unavailable"
    # Once the server is back (the breaker's probe notices within a second or two), the pages
    # are served again.
    deadline = time.monotonic() + 10
    while (status := _dashboard(stack).status_code) != 200 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert status == 200
