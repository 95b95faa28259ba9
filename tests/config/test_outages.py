"""The service under outages of its servers (issue 19, "Faults", item 3), on the production stack:
daphne with production settings and a Celery worker with beat, on PostgreSQL and Redis.

The servers of this machine are shared and may not be restarted, so each outage happens in a
TCP proxy between the service and the server (tests/fakes/tcp_proxy.py): every open connection
is reset, and for ``OUTAGE`` seconds new ones are refused (a server restarting: fast failures)
or accepted and never answered (a hung server: only timeouts end the wait). Meanwhile client
threads write steadily: v1 leads with an ``Idempotency-Key`` (retried with the same key after a
503), v1 chats and legacy chats with the builtin agent, and a webhook subscription turns every
write into deliveries. Every answer is recorded (when, status, latency, ``Retry-After``, error
code), and the timeline is printed second by second (``-s``; docs/security.md, "Under faults").
A monitor polls ``/api/health`` meanwhile, whose checks keep their connections between calls.

What must hold:

- every answer is a success, or the surface's 503 envelope with ``Retry-After``; never a 500,
  never a trace, never an answer later than ``BOUND`` seconds;
- ``/api/health`` answers within ``BOUND`` too: 503 naming what is down during the outage, 200
  before and soon after it;
- rate limits fail open while Redis is down: requests pass, without ``X-RateLimit-*`` headers;
- afterwards every write answered 2xx can be read back, every event of it reaches the receiver
  within ``RECOVERY`` seconds, and daphne and the worker are still running.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from tests.fakes.tcp_proxy import BLACKHOLED, REFUSED, TcpProxy
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.live import celery_worker, daphne, manage, scratch_database

pytestmark = [
    pytest.mark.live,  # daphne, a Celery worker, two proxies and a webhook receiver
    pytest.mark.skipif(
        not (os.environ.get("DATABASE_URL", "").startswith("postgres")
             and os.environ.get("REDIS_URL")),
        reason="set DATABASE_URL (PostgreSQL) and REDIS_URL: these are outages of those two "
               "servers (CI runs the suite on both; the embedded default has no server to lose)",
    ),
]

BEFORE = 4.0  # seconds of load before the outage
OUTAGE = 10.0  # seconds the server is gone
AFTER = 8.0  # seconds of load after it is back
BOUND = 6.0  # seconds: no answer may take longer, whatever the outage (docs/security.md)
RECOVERY = 120.0  # seconds after the outage for every event to reach the receiver (docs/security.md)
REDIS_DB = 11  # a Redis database of these tests' own: nothing of anyone else's is touched
# The v1 events that every write of the load emits and the subscription always receives.
EXPECTED_EVENTS = ("lead.created", "conversation.started", "message.received", "message.sent")


def _through(url: str, port: int, path: str | None = None) -> str:
    """``url`` with 127.0.0.1:``port`` (a proxy) as its host, credentials kept."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{port}" if credentials else f"127.0.0.1:{port}"
    return parts._replace(netloc=netloc, path=parts.path if path is None else path).geturl()


@dataclass
class Stack:
    base: str
    daphne: object
    worker: object
    worker_log: str
    database: str  # the scratch database, reached directly (not through the proxy)
    postgres: TcpProxy
    redis: TcpProxy
    receiver: WebhookReceiver
    public_id: str
    keys: dict[str, str]


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    var = tmp_path_factory.mktemp("outages")
    redis = urlsplit(os.environ["REDIS_URL"])
    with scratch_database(f"salesagent_outages_{os.getpid()}") as database, \
            contextlib.ExitStack() as resources:
        target = urlsplit(database)
        postgres_proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 5432)
        resources.callback(postgres_proxy.close)
        redis_proxy = TcpProxy(redis.hostname or "127.0.0.1", redis.port or 6379)
        resources.callback(redis_proxy.close)
        receiver = WebhookReceiver()
        resources.callback(receiver.close)
        env = {
            "DJANGO_SETTINGS_MODULE": "config.settings", "VAR_DIR": str(var),
            "DATABASE_URL": _through(database, postgres_proxy.port),
            "REDIS_URL": _through(os.environ["REDIS_URL"], redis_proxy.port, f"/{REDIS_DB}"),
            "CACHE_KEY_PREFIX": f"outages-{uuid.uuid4().hex[:8]}",
            "DEBUG": "0", "SECRET_KEY": "outages-live-test", "ALLOWED_HOSTS": "127.0.0.1",
            "V1_REQUIRE_HTTPS": "0", "WEBHOOKS_ALLOW_HTTP": "1",
            "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1",
            # Each legacy chat comes from an address of its own, as visitors do; the public
            # chat's limit per address would otherwise pace the load.
            "TRUST_X_FORWARDED_FOR": "1",
        }
        manage("migrate", "--noinput", env=env)
        created = json.loads(manage("create_tenant", "Outage Co", "--plan", "enterprise",
                                    "--json", env=env))
        server = resources.enter_context(daphne(env))
        worker = resources.enter_context(celery_worker(env, var / "worker.log", beat=True))
        keys = created["keys"]["live"]
        r = httpx.post(f"{server}/api/v1/webhooks", timeout=30,
                       headers={"Authorization": f"Bearer {keys['admin']}"},
                       json={"url": receiver.url(), "events": list(EXPECTED_EVENTS)})
        assert r.status_code == 201, r.text
        yield Stack(base=server, daphne=server.process, worker=worker,
                    worker_log=str(var / "worker.log"), database=database,
                    postgres=postgres_proxy, redis=redis_proxy, receiver=receiver,
                    public_id=created["tenant"]["publicId"], keys=keys)


# --- the load ---------------------------------------------------------------------------------

@dataclass
class Call:
    kind: str  # lead, chat (v1), legacy_chat
    sent: float  # time.monotonic() when the request was sent
    latency: float
    status: int | None  # None: no answer within the client's timeout, or the connection failed
    retry_after: str | None = None
    code: str | None = None  # v1 error code, or the legacy error message
    limited: bool = False  # carried X-RateLimit-Limit
    body: str = ""
    made: dict[str, str] = field(default_factory=dict)  # what a 2xx created, to read back
    at: float = 0.0  # seconds since the outage began, when the request was sent


class Load:
    """Client threads sending writes in a loop until ``stop()``; every answer is a ``Call``."""

    CLIENT_TIMEOUT = 30.0  # far above BOUND: a slow answer is recorded, not cut short

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.calls: list[Call] = []
        self._pending: dict | None = None  # a lead to send again (with its key) after a 503
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._loop, args=(step,), daemon=True)
                         for step in (self._lead, self._chat, self._legacy_chat, self._health)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.CLIENT_TIMEOUT + 5)

    def _loop(self, step: Callable[[httpx.Client], None]) -> None:
        with httpx.Client(base_url=self.stack.base, timeout=self.CLIENT_TIMEOUT) as client:
            while not self._stop.is_set():
                step(client)
                time.sleep(0.1)

    def _send(self, client: httpx.Client, kind: str, method: str, path: str, **kwargs) -> Call:
        sent = time.monotonic()
        try:
            r = client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            call = Call(kind, sent, time.monotonic() - sent, None, body=repr(exc))
        else:
            call = Call(kind, sent, time.monotonic() - sent, r.status_code,
                        retry_after=r.headers.get("Retry-After"), body=r.text,
                        limited="X-RateLimit-Limit" in r.headers, code=_error_code(r))
        with self._lock:
            self.calls.append(call)
        return call

    def _lead(self, client: httpx.Client) -> None:
        # A lead answered 503 is sent again with the same Idempotency-Key, as a client should.
        if self._pending is None:
            n = uuid.uuid4().hex[:12]
            self._pending = {"key": f"lead-{n}",
                             "body": {"email": f"lead-{n}@outage.test", "name": f"Lead {n}"}}
        pending = self._pending
        call = self._send(client, "lead", "POST", "/api/v1/leads", json=pending["body"],
                          headers={**self._auth("write"), "Idempotency-Key": pending["key"]})
        if call.status is not None and 200 <= call.status < 300:
            call.made = {"lead": json.loads(call.body)["id"]}
        if call.status not in (None, 503):
            self._pending = None

    def _chat(self, client: httpx.Client) -> None:
        call = self._send(client, "chat", "POST", "/api/v1/chat", headers=self._auth("write"),
                          json={"message": "Hello, what does your product cost?",
                                "visitorId": f"v1-{uuid.uuid4().hex[:12]}"})
        if call.status == 200:
            reply = json.loads(call.body)
            call.made = {"session": reply["sessionId"], "message": reply["id"]}

    def _legacy_chat(self, client: httpx.Client) -> None:
        address = f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"
        call = self._send(client, "legacy_chat", "POST", f"/api/chat?tenant={self.stack.public_id}",
                          headers={"X-Forwarded-For": address},
                          json={"message": "Hi there, do you have a free trial?",
                                "visitorId": f"legacy-{uuid.uuid4().hex[:12]}"})
        if call.status == 200:
            reply = json.loads(call.body)
            # The legacy conversation shows its messages without ids: the reply is found by
            # its time.
            call.made = {"conversation": reply["sessionId"], "created": reply["createdAt"]}

    def _health(self, client: httpx.Client) -> None:
        # A monitor polling /api/health: its checks keep their connections between calls
        # (the pool's, a kept broker connection), which must notice the outage and recover.
        # From an address of its own each time: health's public budget is 60 a minute each.
        address = f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"
        call = self._send(client, "health", "GET", "/api/health",
                          headers={"X-Forwarded-For": address})
        with contextlib.suppress(ValueError):
            call.made = {name: c["status"] for name, c in json.loads(call.body)["components"].items()}

    def _auth(self, scope: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.stack.keys[scope]}"}


def _error_code(r: httpx.Response) -> str | None:
    if r.status_code < 400:
        return None
    try:
        error = r.json()["error"]
    except (ValueError, KeyError, TypeError):
        return "<not the envelope>"
    return error["code"] if isinstance(error, dict) else error


@contextlib.contextmanager
def _loaded(stack: Stack) -> Iterator[Load]:
    load = Load(stack)
    load.start()
    try:
        yield load
    finally:
        load.stop()


def _run_outage(stack: Stack, proxy: TcpProxy, mode: str, down: tuple[str, ...]
                ) -> tuple[list[Call], float]:
    """BEFORE seconds of load, the outage, AFTER seconds of load; the calls, with their times
    counted from the outage's start, and when the outage ended (``time.monotonic()``). The
    health monitor's calls are checked here (``down``: the components the outage takes) and
    left out of what is returned."""
    with _loaded(stack) as load:
        time.sleep(BEFORE)
        started = time.monotonic()
        with proxy.down(mode):
            time.sleep(OUTAGE)
        restored = time.monotonic()
        time.sleep(AFTER)
    for call in load.calls:
        call.at = call.sent - started
    calls = sorted(load.calls, key=lambda call: call.at)
    assert_health_holds([c for c in calls if c.kind == "health"], down)
    return [c for c in calls if c.kind != "health"], restored


# --- what is checked --------------------------------------------------------------------------

def timeline(calls: list[Call]) -> str:
    """The calls second by second: how many of each status, the slowest, the Retry-After seen."""
    rows = defaultdict(list)
    for call in calls:
        rows[int(call.at // 1)].append(call)
    lines = ["second | answers | slowest (s) | Retry-After | rate-limit headers"]
    for second in sorted(rows):
        group = rows[second]
        statuses = Counter(str(call.status) for call in group)
        waits = sorted({call.retry_after for call in group if call.retry_after})
        limited = sum(call.limited for call in group)
        lines.append(f"{second:+d} | {', '.join(f'{n}×{s}' for s, n in sorted(statuses.items()))}"
                     f" | {max(call.latency for call in group):.2f} | {', '.join(waits) or '-'}"
                     f" | {limited}/{len(group)}")
    return "\n".join(lines)


def _bad_answers(calls: list[Call]) -> list[Call]:
    """Answers other than a success or the surface's 503 with Retry-After, or too slow."""
    bad = []
    for call in calls:
        success = call.status is not None and 200 <= call.status < 300
        unavailable = (call.status == 503 and (call.retry_after or "").isdigit()
                       and call.code in ("service_unavailable", _legacy_message(call)))
        if not (success or unavailable) or call.latency > BOUND or "Traceback" in call.body:
            bad.append(call)
    return bad


def _legacy_message(call: Call) -> str | None:
    """The legacy envelope's message, when the call was to the legacy surface."""
    return call.code if call.kind == "legacy_chat" and isinstance(call.code, str) else None


def assert_answers_hold(calls: list[Call]) -> None:
    report = timeline(calls)
    print(f"\n{report}")
    bad = _bad_answers(calls)
    assert not bad, "\n".join(
        f"{c.kind} at {c.at:+.1f}s: {c.status} in {c.latency:.2f}s, Retry-After "
        f"{c.retry_after}, {c.body[:300]}" for c in bad[:10]) + "\n" + report
    # Answered before the outage began, or sent 3 s after it ended: all successes.
    before = [c for c in calls if c.at + c.latency < 0]
    after = [c for c in calls if c.at > OUTAGE + 3]
    assert before and all(c.status and c.status < 300 for c in before), report
    assert after and all(c.status and c.status < 300 for c in after), report


def assert_health_holds(calls: list[Call], down: tuple[str, ...]) -> None:
    """/api/health answers within BOUND throughout: 200 with every component ok before the
    outage and from 3 s after it, 503 naming exactly the components the outage took (after its
    first second, until its end)."""
    report = timeline(calls)
    print(f"\n/api/health\n{report}")
    assert calls and all(c.status in (200, 503) and c.latency <= BOUND for c in calls), report
    before = [c for c in calls if c.at + c.latency < 0]
    after = [c for c in calls if c.at > OUTAGE + 3]
    during = [c for c in calls if c.at >= 1 and c.at + c.latency <= OUTAGE]
    for call in before + after:
        assert call.status == 200 and set(call.made.values()) == {"ok"}, (call, report)
    assert during, report
    for call in during:
        assert call.status == 503, (call.body, report)
        assert {name for name, status in call.made.items() if status == "down"} == set(down), (
            call.body, report)


def assert_nothing_lost(stack: Stack, calls: list[Call], restored: float) -> None:
    """Every write answered 2xx is there; every event reaches the receiver; both processes
    still run."""
    admin = {"Authorization": f"Bearer {stack.keys['admin']}"}
    with httpx.Client(base_url=stack.base, timeout=30, headers=admin) as client:
        for call in calls:
            _assert_made(client, call)
    deadline = time.monotonic() + RECOVERY
    missing = _undelivered(stack)
    while missing and time.monotonic() < deadline:
        time.sleep(1)
        missing = _undelivered(stack)
    assert not missing, (f"{len(missing)} events never reached the receiver, e.g. "
                         f"{sorted(missing)[:5]}\n" + _tail(stack.worker_log))
    print(f"every event delivered {time.monotonic() - restored:.0f} s after the outage ended")
    assert stack.daphne.poll() is None and stack.worker.poll() is None, _tail(stack.worker_log)


def _assert_made(client: httpx.Client, call: Call) -> None:
    made = call.made
    if "lead" in made:
        r = client.get(f"/api/v1/leads/{made['lead']}")
        assert r.status_code == 200, (call, r.text)
    elif "session" in made:
        r = client.get(f"/api/v1/chat/sessions/{made['session']}")
        assert r.status_code == 200 and made["message"] in r.text, (call, r.text)
    elif "conversation" in made:
        r = client.get(f"/api/conversations/{made['conversation']}")
        assert r.status_code == 200, (call, r.text)
        replies = [m for m in r.json()["conversation"]["messages"]
                   if m["role"] == "assistant" and m["createdAt"] == made["created"]]
        assert replies, (call, r.text)


def _undelivered(stack: Stack) -> set[str]:
    """The ids of the expected events in the database that the receiver has not had."""
    with psycopg.connect(stack.database) as conn:
        rows = conn.execute("SELECT id FROM core_event WHERE type = ANY(%s)",
                            [list(EXPECTED_EVENTS)]).fetchall()
    expected = {f"evt_{row[0].hex}" for row in rows}
    arrived = {json.loads(received.body)["id"] for received in list(stack.receiver.received)}
    return expected - arrived


def _tail(path: str, size: int = 3000) -> str:
    with open(path, errors="replace") as log:
        return log.read()[-size:]


# --- the outages ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [REFUSED, BLACKHOLED])
def test_an_outage_of_redis(stack, mode):
    calls, restored = _run_outage(stack, stack.redis, mode, down=("cache", "broker"))
    assert_answers_hold(calls)
    # Rate limits fail open: during the outage requests pass without limits or their headers.
    during = [c for c in calls if 1 <= c.at <= OUTAGE - 1]
    assert during and all(c.status and c.status < 300 and not c.limited for c in during), \
        timeline(calls)
    assert all(c.limited for c in calls if c.at + c.latency < 0)
    assert_nothing_lost(stack, calls, restored)


@pytest.mark.parametrize("mode", [REFUSED, BLACKHOLED])
def test_an_outage_of_postgresql(stack, mode):
    calls, restored = _run_outage(stack, stack.postgres, mode, down=("database",))
    assert_answers_hold(calls)
    during = [c for c in calls if 1 <= c.at <= OUTAGE - 1]
    assert during and all(c.status == 503 for c in during), timeline(calls)
    assert_nothing_lost(stack, calls, restored)
