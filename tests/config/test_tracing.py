"""Optional OpenTelemetry tracing (issue 31, "Logs and traces"; docs/operations.md): a chat turn
against the fake model server makes one trace from the web request through the model's HTTP
call to the Celery task the request queued, in another process; on PostgreSQL and Redis their
statements and commands are spans of it too. The spans are the SDK's in-memory exporter's
(tests/tracing_probe.py). Tracing stays off unless the OTEL_* variables ask for it."""

from __future__ import annotations

import json
import os
import time

import httpx
import pytest

from config.tracing import tracing_enabled
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.webhook_receiver import WebhookReceiver
from tests.live import ROOT, celery_worker, environment, manage, scratch_database

ON_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
BASE = {"V1_REQUIRE_HTTPS": "0", "AGENT_WARM_UP": "false", "AGENT_MAX_RETRIES": "0",
        "AGENT_TIMEOUT_SECONDS": "10", "WEBHOOKS_ALLOW_HTTP": "1",
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": None,
        "OTEL_TRACES_EXPORTER": None}


@pytest.mark.parametrize(("environ", "on"), [
    ({}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
    ({"OTEL_TRACES_EXPORTER": "console"}, True),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, False),
])
def test_tracing_is_off_unless_the_environment_asks(environ, on):
    assert tracing_enabled(environ) is on


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture(scope="module")
def receiver():
    server = WebhookReceiver()
    yield server
    server.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory, fake, receiver):
    var = tmp_path_factory.mktemp("var")
    env = {**BASE, "VAR_DIR": str(var)}
    if ON_POSTGRES:
        with scratch_database(f"salesagent_tracing_{os.getpid()}") as database:
            yield from _serve({**env, "DATABASE_URL": database, "DEBUG": "0",
                               "SECRET_KEY": "tracing-secret-key-0123456789",
                               "ALLOWED_HOSTS": "127.0.0.1,localhost"}, var, fake)
    else:
        yield from _serve({**env, "DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1",
                           "SECRET_KEY": None, "ALLOWED_HOSTS": None}, var, fake)


def _serve(env, var, fake):
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Traced", "--plan", "enterprise", "--agent",
                                "openai", "--json", env=env))
    manage("configure_agent", created["tenant"]["id"], "--api-key", "sk-traced-model-key",
           "--base-url", fake.base_url, "--model", "fake-model", env=env)
    spans_file = var / "worker-spans.json"
    worker_env = {**env, "TRACING_PROBE": "worker", "TRACING_PROBE_SPANS": str(spans_file)}
    with _probe_daphne({**env, "TRACING_PROBE": "web"}) as base, \
            celery_worker(worker_env, var / "worker.log", app="tests.tracing_probe", pool="solo"):
        yield {"base": base, "key": created["keys"]["live"]["admin"], "spans": spans_file,
               "worker_log": var / "worker.log"}


def _probe_daphne(env):
    import contextlib
    import subprocess
    import sys
    import tempfile

    from tests.live import Server, free_port, wait_for_port

    @contextlib.contextmanager
    def run():
        port = free_port()
        log = tempfile.NamedTemporaryFile(prefix="daphne-", suffix=".log", delete=False)  # noqa: SIM115
        proc = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p",
                                 str(port), "tests.tracing_probe:application"], cwd=ROOT,
                                env=environment(env), stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, proc=proc)
            server = Server(f"http://127.0.0.1:{port}")
            server.log = log.name
            yield server
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            log.close()

    return run()


@pytest.mark.live
def test_a_chat_turn_makes_one_trace_to_the_model_and_the_task_it_queued(stack, fake, receiver):
    auth = {"Authorization": f"Bearer {stack['key']}"}
    with httpx.Client(base_url=stack["base"], headers=auth, timeout=180) as client:
        hook = client.post("/api/v1/webhooks", json={
            "url": receiver.url(), "events": ["conversation.started", "message.received"]})
        assert hook.status_code == 201, hook.text
        fake.reset()
        r = client.post("/api/v1/chat", json={"message": "What does it cost?",
                                              "visitorId": "traced-visitor"})
        assert r.status_code == 200, r.text
        assert fake.headers, "the model was not called"
        receiver.wait_for(1, timeout=180)
        searched = client.get("/api/v1/leads", params={"search": "hidden.person@example.com"})
        assert searched.status_code == 200
        web = client.get("/__spans").json()

    def server(path: str) -> dict:
        found = [s for s in web if s["kind"] == "SERVER" and any(
            str(s["attributes"].get(name, "")).rstrip("/").endswith(path)
            for name in ("http.route", "http.target", "url.path")) or path in s["name"]]
        assert found, [(s["kind"], s["name"], s["attributes"]) for s in web][:20]
        return found[0]

    turn = server("api/v1/chat")
    trace = [s for s in web if s["trace"] == turn["trace"]]
    by_id = {s["id"]: s for s in trace}

    def under_turn(span) -> bool:
        while span["parent"] in by_id:
            span = by_id[span["parent"]]
            if span is turn:
                return True
        return False

    search = server("api/v1/leads")
    assert "hidden" not in json.dumps(search) and "search=" not in json.dumps(search), search
    model = [s for s in trace if s["kind"] == "CLIENT" and any(
        "/chat/completions" in str(v) for v in s["attributes"].values())]
    assert model and all(under_turn(s) for s in model), [s["name"] for s in trace]
    published = [s for s in trace if s["kind"] == "PRODUCER" and "webhooks.deliver" in s["name"]]
    assert published and all(under_turn(s) for s in published), [s["name"] for s in trace]
    if ON_POSTGRES:
        systems = {s["attributes"].get("db.system") for s in trace if under_turn(s)}
        assert {"postgresql", "redis"} <= systems, systems

    deadline = time.monotonic() + 60
    while True:
        worker = json.loads(stack["spans"].read_text()) if stack["spans"].exists() else []
        ran = [s for s in worker if s["kind"] == "CONSUMER" and "webhooks.deliver" in s["name"]]
        if ran or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert ran, stack["worker_log"].read_text()[-3000:]
    assert {s["trace"] for s in ran} == {turn["trace"]}
    assert {s["parent"] for s in ran} <= {s["id"] for s in published}
    if ON_POSTGRES:
        task_ids = {s["id"] for s in ran}
        assert any(s["attributes"].get("db.system") == "postgresql" and s["parent"] in task_ids
                   for s in worker), [s["name"] for s in worker]
