"""What the logs hold (issue 28, "Logs"; docs/privacy.md): a real daphne's access log has the
path of each request and none of its query string, where searches put names and email
addresses; any log line masks the email addresses that other code's messages quote."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.live import ROOT, daphne, environment, manage, scratch_database

EMAIL = "alice.searched@example.com"
PRODUCTION = {"DEBUG": "0", "SECRET_KEY": "access-log-secret-key-0123456789",
              "V1_REQUIRE_HTTPS": "0", "ALLOWED_HOSTS": "127.0.0.1,localhost",
              "AGENT_WARM_UP": "false",
              # daphne's own access line, which LOG_FORMAT=json replaces (tests/config/test_logs.py)
              "LOG_FORMAT": "text"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """daphne with production settings, on a scratch PostgreSQL database when the suite runs on
    PostgreSQL, on an SQLite file otherwise."""
    env = {**PRODUCTION, "VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    if os.environ.get("DATABASE_URL", "").startswith("postgres"):
        with scratch_database(f"salesagent_access_log_{os.getpid()}") as database:
            yield from _serve({**env, "DATABASE_URL": database})
    else:
        yield from _serve({**env, "DATABASE_URL": None, "REDIS_URL": None})


def _serve(env: dict):
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Logs Co", "--json", env=env))
    with daphne(env) as base:
        yield {"base": base, "key": created["keys"]["live"]["admin"], "log": base.log}


@pytest.mark.live
def test_the_access_log_holds_paths_and_no_query_string(server):
    auth = {"Authorization": f"Bearer {server['key']}"}
    with httpx.Client(base_url=server["base"], headers=auth, timeout=30) as client:
        created = client.post("/api/v1/leads", json={"email": EMAIL, "name": "Alice Searched"})
        assert created.status_code == 201, created.text
        answers = [
            client.get("/api/v1/leads", params={"search": EMAIL}),
            client.get("/api/v1/leads/search", params={"q": "Alice Searched"}),
            client.get("/api/leads", params={"q": EMAIL}),
            client.get("/dashboard/leads/", params={"q": EMAIL}, headers={"Authorization": ""}),
            client.get("/api/v1/nothing-here", params={"email": EMAIL}),
        ]
    assert [r.status_code for r in answers] == [200, 200, 200, 302, 404]
    assert answers[0].json()["data"][0]["email"] == EMAIL  # the search found her
    log = Path(server["log"]).read_text(errors="replace")
    for line in ('"GET /api/v1/leads" 200', '"GET /api/v1/leads/search" 200',
                 '"GET /api/leads" 200', '"GET /dashboard/leads/" 302',
                 '"GET /api/v1/nothing-here" 404', '"POST /api/v1/leads" 201'):
        assert line in log, log[-3000:]
    assert "alice" not in log.lower() and "Searched" not in log and "?" not in log, log[-3000:]


def test_a_request_named_in_daphnes_warnings_has_no_query_string():
    """Daphne names a request by its repr in "took too long to shut down" warnings."""
    from daphne import http_protocol
    from twisted.internet.testing import StringTransport
    from twisted.web import http

    from config.serving import configure_daphne_requests

    configure_daphne_requests()
    channel = http.HTTPChannel()
    channel.makeConnection(StringTransport())
    server = type("Server", (), {"protocol_connected": lambda self, protocol: None})()
    channel.factory = type("Factory", (), {"server": server})()
    request = http_protocol.WebRequest(channel)
    request.method, request.uri = b"GET", f"/api/v1/leads?search={EMAIL}".encode()
    assert repr(request).endswith("method=GET path=/api/v1/leads>"), repr(request)


def _line(logger: str, message: str, *args, exc: BaseException | None = None) -> str:
    """One record formatted by the handler that the settings' LOGGING gives the root logger."""
    handler = next(h for h in logging.getLogger().handlers if h.formatter is not None)
    record = logging.getLogger(logger).makeRecord(
        logger, logging.WARNING, __file__, 1, message, args,
        (type(exc), exc, exc.__traceback__) if exc else None)
    record.request_id = "req_test"
    return handler.format(record)


def test_log_lines_mask_the_email_addresses_other_code_quotes():
    refused = f"(550, b'5.1.1 <{EMAIL}>: Recipient address rejected')"
    line = _line("conversations", "Email %s not sent: %s", "0d1f", refused)
    assert EMAIL not in line and "Email 0d1f not sent: (550, b'5.1.1 <[email]>" in line
    try:
        raise ValueError(f"Key (email)=({EMAIL}) already exists.")
    except ValueError as exc:
        line = _line("core.events", "Subscriber failed", exc=exc)
    assert "Traceback" in line and "Key (email)=([email]) already exists." in line
    assert EMAIL not in line


@pytest.mark.live
def test_a_celery_worker_masks_them_as_well(tmp_path):
    """Celery puts handlers of its own in place of the settings' in a worker and in beat."""
    script = (
        "import logging\n"
        "from config.celery import app\n"
        "app.log.setup_logging_subsystem(loglevel='INFO')\n"
        f"logging.getLogger('conversations').warning('refused <{EMAIL}>')\n"
        f"logging.getLogger('celery.task').warning('task refused <{EMAIL}>')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=60,
                          env=environment({"VAR_DIR": str(tmp_path), "DATABASE_URL": None,
                                           "REDIS_URL": None}))
    assert proc.returncode == 0, proc.stderr
    assert "refused <[email]>" in proc.stderr and "task refused <[email]>" in proc.stderr
    assert EMAIL not in proc.stderr + proc.stdout
