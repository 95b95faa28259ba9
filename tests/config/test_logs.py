"""Machine-readable logs (issue 31, "Logs and traces"; docs/operations.md): with production
settings every line is one JSON object, and every line of a request or of a task it queued
carries the request id (the one answered in ``X-Request-Id``), the tenant's public id, the
surface and the route template; no query string and no email address in any line."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import os
import time
from pathlib import Path

import httpx
import pytest
from django.urls import resolve

from config import logs
from tests import knowledge_files as files
from tests.live import celery_worker, daphne, manage, scratch_database

PRODUCTION = {"DEBUG": "0", "SECRET_KEY": "json-logs-secret-key-0123456789",
              "V1_REQUIRE_HTTPS": "0", "ALLOWED_HOSTS": "127.0.0.1,localhost",
              "AGENT_WARM_UP": "false", "LOG_FORMAT": None}
EMAIL = "carol.private@example.com"


@pytest.mark.parametrize(("path", "route"), [
    ("/api/v1/leads", "/api/v1/leads"),
    ("/api/v1/leads/lead_0123456789abcdef0123456789abcdef", "/api/v1/leads/<id>"),
    ("/api/leads/0d1f8b4e-7c55-4a55-9d2e-3b9a1c0e5f10", "/api/leads/<id>"),
    ("/dashboard/leads/", "/dashboard/leads/"),
    ("/meetings/some-signed-token/", "/meetings/<token>/"),
])
def test_the_route_template_names_no_record(path, route):
    assert logs.route_template(resolve(path)) == route


def test_a_regular_expression_route_becomes_a_template():
    match = type("Match", (), {"route": r"api/^items/(?P<pk>[^/.]+)/(?P<part>(a|b))\.json$"})()
    assert logs.route_template(match) == "/api/items/<pk>/<part>.json"


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_view_hook_binds_the_route_on_either_path(asynchronous, rf):
    """Django calls the middleware's view hook (``process_view``) itself; on the async path it
    is a coroutine function of its own, which must bind the route too (it once called itself)."""
    import asyncio

    from config.middleware import RequestIdMiddleware

    async def answer(request):  # an async handler below: the middleware takes the async path
        return None

    middleware = RequestIdMiddleware(answer if asynchronous else (lambda request: None))
    request = rf.get("/api/v1/leads")
    request.resolver_match = resolve("/api/v1/leads")
    context = contextvars.copy_context()

    def hook():
        token = logs.open_scope(request_id="req_1", surface="v1")
        try:
            result = middleware.process_view(request, None, (), {})
            if asynchronous:
                asyncio.run(result)
            return logs.current("route")
        finally:
            logs.close_scope(token)

    assert context.run(hook) == "/api/v1/leads"


def test_a_json_line_holds_the_scope_and_masks_addresses():
    handler = logging.StreamHandler(io.StringIO())
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("tests.json")
    logger.addHandler(handler)
    token = logs.open_scope(request_id="req_1", surface="v1")
    try:
        logs.bind(route="/api/v1/leads")
        logs.bind(tenant="tn_0123")
        logger.warning("refused <%s>", EMAIL)
    finally:
        logs.close_scope(token)
        logger.removeHandler(handler)
    logger.addHandler(handler)
    try:
        # In a context of its own: a line outside any scope (whatever an earlier test of this
        # thread left in its context, such as an eager task's scope).
        contextvars.Context().run(logger.warning, "outside")
    finally:
        logger.removeHandler(handler)
    first, second = handler.stream.getvalue().splitlines()
    line = json.loads(first)
    assert line["message"] == "refused <[email]>" and EMAIL not in first
    assert {k: line[k] for k in ("request_id", "tenant", "surface", "route", "level", "logger")} \
        == {"request_id": "req_1", "tenant": "tn_0123", "surface": "v1",
            "route": "/api/v1/leads", "level": "WARNING", "logger": "tests.json"}
    assert line["time"].endswith("Z")
    assert set(json.loads(second)) == {"time", "level", "logger", "message"}


def test_the_log_format_follows_debug_and_refuses_a_typo(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from config.settings.logging import logging_settings

    monkeypatch.delenv("LOG_FORMAT", raising=False)
    assert logging_settings(False)["LOG_FORMAT"] == "json"
    assert logging_settings(True)["LOG_FORMAT"] == "text"
    monkeypatch.setenv("LOG_FORMAT", "JSON")
    assert logging_settings(True)["LOG_FORMAT"] == "json"
    monkeypatch.setenv("LOG_FORMAT", "yaml")
    with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT"):
        logging_settings(False)


def test_every_answer_has_a_request_id_even_a_middlewares_refusal(api, kit):
    r = api.get("/api/v1/leads?search=%00", headers={**kit.auth("read"),
                                                     "X-Request-Id": "lb-0123456789"})
    assert r.status_code == 400 and r.headers["X-Request-Id"] == "lb-0123456789"
    r = api.get("/api/v1/nothing-here")
    assert r.status_code == 404 and r.headers["X-Request-Id"].startswith("req_")


# --- Through real processes: daphne and a Celery worker with production settings -------------


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    var = tmp_path_factory.mktemp("var")
    env = {**PRODUCTION, "VAR_DIR": str(var)}
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        with scratch_database(f"salesagent_json_logs_{os.getpid()}") as database:
            yield from _serve({**env, "DATABASE_URL": database}, var)
    else:
        yield from _serve({**env, "DATABASE_URL": None, "REDIS_URL": None}, var)


def _serve(env, var):
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Json Logs", "--plan", "enterprise", "--json", env=env))
    worker_log = var / "worker.log"
    # The suite runs as root here and in CI: Celery then warns, through Python's warnings and
    # before its logging is set up, that a worker should not; a production worker is not root.
    worker_env = {**env, "PYTHONWARNINGS": "ignore::Warning:celery.platforms"}
    with daphne(env) as base, celery_worker(worker_env, worker_log, level="INFO",
                                                   quiet=True):  # no banner: log lines only
        yield {"base": base, "key": created["keys"]["live"]["admin"],
               "tenant": created["tenant"]["publicId"], "log": base.log, "worker_log": worker_log}


def _lines(path) -> list[dict]:
    text = Path(path).read_text(errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}\n{text[-3000:]}") from None
    return parsed


@pytest.mark.live
def test_every_line_is_json_and_a_request_and_its_task_carry_one_id(stack):
    auth = {"Authorization": f"Bearer {stack['key']}"}
    with httpx.Client(base_url=stack["base"], headers=auth, timeout=30) as client:
        created = client.post("/api/v1/leads", json={"email": EMAIL, "name": "Carol Private"},
                              headers={"X-Request-Id": "lb-create-0001"})
        assert created.status_code == 201, created.text
        assert created.headers["X-Request-Id"] == "lb-create-0001"
        lead = created.json()["id"]
        searched = client.get("/api/v1/leads", params={"search": EMAIL})
        assert searched.status_code == 200 and searched.json()["data"][0]["id"] == lead
        missing = client.get(f"/api/v1/leads/{lead[:-4]}beef")
        assert missing.status_code == 404
        upload = client.post("/api/v1/knowledge-base", headers={"X-Request-Id": "lb-upload-0001"},
                             files={"file": ("locked.pdf", files.encrypted_pdf([["x"]]),
                                             "application/pdf")},
                             data={"title": "Locked"})
        assert upload.status_code == 201, upload.text
        document = upload.json()["id"]
        deadline = time.monotonic() + 180  # a worker on a busy machine
        while (state := client.get(f"/api/v1/knowledge-base/{document}").json()).get(
                "status") == "processing":
            assert time.monotonic() < deadline, Path(stack["worker_log"]).read_text()[-3000:]
            time.sleep(1)
        assert state.get("status") == "failed", state

    web = _lines(stack["log"])
    requests = [line for line in web if line["logger"] == "salesagent.requests"]
    by_id = {line["request_id"]: line for line in requests}
    line = by_id["lb-create-0001"]
    assert (line["tenant"], line["surface"], line["route"], line["status"], line["method"]) \
        == (stack["tenant"], "v1", "/api/v1/leads", 201, "POST")
    assert line["duration_ms"] >= 0
    assert searched.headers["X-Request-Id"] in by_id
    assert by_id[searched.headers["X-Request-Id"]]["route"] == "/api/v1/leads"
    line = by_id[missing.headers["X-Request-Id"]]
    assert (line["route"], line["status"], line["tenant"]) == ("/api/v1/leads/<id>", 404,
                                                              stack["tenant"])
    web_text = Path(stack["log"]).read_text()
    everything = web_text + Path(stack["worker_log"]).read_text()
    assert "carol" not in everything.lower() and "?" not in web_text

    worker = _lines(stack["worker_log"])
    failed = [line for line in worker
              if line["message"].startswith("document ") and " failed: " in line["message"]]
    assert failed, worker[-20:]
    assert {(line["request_id"], line["tenant"], line["surface"], line["route"])
            for line in failed} == {("lb-upload-0001", stack["tenant"], "task",
                                     "knowledge.index_document")}, failed
