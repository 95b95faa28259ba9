"""The restore drill (issue 31, "Backup and restore"; docs/deploy.md): a tenant filled through the
API is backed up while the service runs, restored into a new database, and a new server on it
answers every request as the old one did; the secrets stored encrypted (the language-model key,
the webhook secret) still decrypt and the API keys still authenticate.

On the embedded default: ``manage.py backup`` and ``manage.py restore`` into a new VAR_DIR. On
PostgreSQL: ``pg_dump -Fc`` and ``pg_restore`` into a new database, with the same SECRET_KEY."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import httpx
import pytest

from tests import knowledge_files as files
from tests.fakes.openai_server import FakeOpenAI
from tests.live import daphne, manage, scratch_database

pytestmark = pytest.mark.live

ON_POSTGRES = os.environ.get("DATABASE_URL", "").startswith("postgres")
EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "AGENT_WARM_UP": "false",
            "AGENT_MAX_RETRIES": "0", "AGENT_TIMEOUT_SECONDS": "10", "FIELD_ENCRYPTION_KEY": None,
            "WEBHOOKS_ALLOW_HTTP": "1", "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1"}
PRODUCTION = {"DEBUG": "0", "SECRET_KEY": "drill-secret-key-0123456789abcdef",
              "ALLOWED_HOSTS": "127.0.0.1,localhost", "V1_REQUIRE_HTTPS": "0",
              "AGENT_WARM_UP": "false", "AGENT_MAX_RETRIES": "0", "AGENT_TIMEOUT_SECONDS": "10",
              "FIELD_ENCRYPTION_KEY": None, "WEBHOOKS_ALLOW_HTTP": "1",
              "WEBHOOKS_ALLOW_PRIVATE_TARGETS": "1"}
MODEL_KEY = "sk-drill-model-key-0123456789"
WEBHOOK_SECRET = "whsec_drill_0123456789abcdef0123456789"


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


def _fill(base: str, key: str) -> None:
    """Leads, conversations (chat turns through the model), a document, a webhook and its
    deliveries, through the API as a client would."""
    auth = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, headers=auth, timeout=180) as client:
        hook = client.post("/api/v1/webhooks", json={
            "url": "http://127.0.0.1:9/drill", "events": ["lead.created", "lead.updated"],
            "secret": WEBHOOK_SECRET})
        assert hook.status_code == 201, hook.text
        for n in range(3):
            r = client.post("/api/v1/leads", json={
                "email": f"drill{n}@example.com", "name": f"Drill Person {n}",
                "company": "Drill Co", "customFields": {"n": n}})
            assert r.status_code == 201, r.text
        r = client.patch(f"/api/v1/leads/{r.json()['id']}", json={"status": "contacted"})
        assert r.status_code == 200, r.text
        for visitor in ("drill-visitor-1", "drill-visitor-2"):
            r = client.post("/api/v1/chat", json={"message": "What does the product cost?",
                                                  "visitorId": visitor})
            assert r.status_code == 200, r.text
        r = client.post("/api/v1/knowledge-base", files={
            "file": ("guide.pdf", files.make_pdf([["Guide", "Paste the script tag."]]),
                     "application/pdf")}, data={"title": "Guide"})
        assert r.status_code == 201, r.text


def _answers(base: str, key: str) -> dict[str, object]:
    """Every answer compared: the lists and each record in them."""
    auth = {"Authorization": f"Bearer {key}"}
    answers: dict[str, object] = {}
    with httpx.Client(base_url=base, headers=auth, timeout=180) as client:
        def get(path: str):
            r = client.get(path)
            assert r.status_code == 200, (path, r.text)
            answers[path] = r.json()
            return r.json()

        for lead in get("/api/v1/leads?limit=100")["data"]:
            get(f"/api/v1/leads/{lead['id']}")
            get(f"/api/leads/{lead['id'].removeprefix('lead_')}")
        for conversation in get("/api/v1/conversations?limit=100")["data"]:
            get(f"/api/v1/conversations/{conversation['id']}")
        for document in get("/api/v1/knowledge-base")["data"]:
            get(f"/api/v1/knowledge-base/{document['id']}")
        for hook in get("/api/v1/webhooks")["data"]:
            get(f"/api/v1/webhooks/{hook['id']}")
            get(f"/api/v1/webhooks/{hook['id']}/deliveries")
        get("/api/leads")
        get("/api/v1/users")
        get("/api/v1/analytics/funnel")
        get("/api/v1/analytics/activity")
    return answers


def _check_secrets(env: dict, base: str, key: str, fake: FakeOpenAI) -> None:
    fake.reset()
    r = httpx.post(f"{base}/api/v1/chat", headers={"Authorization": f"Bearer {key}"},
                   json={"message": "Hello again", "visitorId": "drill-after"}, timeout=180)
    assert r.status_code == 200, r.text
    assert fake.headers and fake.headers[-1]["authorization"] == f"Bearer {MODEL_KEY}"
    secrets = manage("shell", "--no-imports", "-c", "from webhooks.models import Subscription as S; "
                     "print([s.secret for s in S.objects.all()])", env=env)
    assert secrets.strip() == repr([WEBHOOK_SECRET])


def _tenant(env: dict, fake: FakeOpenAI) -> tuple[str, str]:
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Drill Co", "--plan", "enterprise",
                                "--agent", "openai", "--json", env=env))
    manage("configure_agent", created["tenant"]["id"], "--api-key", MODEL_KEY,
           "--base-url", fake.base_url, "--model", "fake-model", env=env)
    extra = json.loads(manage("create_api_key", "--tenant", created["tenant"]["id"], "--scope",
                              "read", "--mode", "live", "--name", "drill reader", "--json",
                              env=env))
    return created["keys"]["live"]["admin"], extra["key"]


def test_a_backup_restores_into_a_new_database_and_answers_as_before(tmp_path, fake):
    """On the database the suite runs on: SQLite (manage.py backup and restore) or PostgreSQL
    (pg_dump and pg_restore)."""
    (_drill_postgresql if ON_POSTGRES else _drill_embedded)(tmp_path, fake)


def _drill_embedded(tmp_path, fake):
    old = {**EMBEDDED, "VAR_DIR": str(tmp_path / "var")}
    admin, reader = _tenant(old, fake)
    archive = tmp_path / "backup.tar.gz"
    with daphne(old) as base:
        _fill(base, admin)
        before = _answers(base, admin)
        # Taken while the server runs: SQLite's online backup copies a consistent state.
        assert manage("backup", "--output", str(archive), env=old).strip() == str(archive)
    assert oct(archive.stat().st_mode & 0o777) == "0o600"

    new_var = tmp_path / "restored"
    out = manage("restore", str(archive), "--var-dir", str(new_var), env=old)
    assert f"VAR_DIR={new_var}" in out
    assert (new_var / "secret_key").read_text() == (tmp_path / "var" / "secret_key").read_text()
    new = {**old, "VAR_DIR": str(new_var)}
    shutil.rmtree(tmp_path / "var")  # the old service is gone: nothing is read from there
    with daphne(new) as base:
        assert _answers(base, admin) == before
        r = httpx.get(f"{base}/api/v1/leads", headers={"Authorization": f"Bearer {reader}"})
        assert r.status_code == 200 and len(r.json()["data"]) == 3
        _check_secrets(new, base, admin, fake)

    with pytest.raises(RuntimeError, match="not empty"):
        manage("restore", str(archive), "--var-dir", str(new_var), env=old)


def _drill_postgresql(tmp_path, fake):
    pid = os.getpid()
    with scratch_database(f"salesagent_drill_a_{pid}") as old_url, \
            scratch_database(f"salesagent_drill_b_{pid}") as new_url:
        old = {**PRODUCTION, "DATABASE_URL": old_url, "VAR_DIR": str(tmp_path / "var-a")}
        admin, reader = _tenant(old, fake)
        dump = tmp_path / "drill.dump"
        with daphne(old) as base:
            _fill(base, admin)
            before = _answers(base, admin)
            subprocess.run(["pg_dump", "-Fc", "--no-owner", "-f", str(dump), old_url],
                           check=True, timeout=120)
        subprocess.run(["pg_restore", "--no-owner", "--exit-on-error", "-d", new_url,
                        str(dump)], check=True, timeout=120)
        new = {**old, "DATABASE_URL": new_url, "VAR_DIR": str(tmp_path / "var-b")}
        with daphne(new) as base:
            assert _answers(base, admin) == before
            r = httpx.get(f"{base}/api/v1/leads", headers={"Authorization": f"Bearer {reader}"})
            assert r.status_code == 200 and len(r.json()["data"]) == 3
            _check_secrets(new, base, admin, fake)


def test_backup_refuses_postgresql_and_restore_refuses_a_foreign_archive(tmp_path):
    import tarfile

    if ON_POSTGRES:
        with pytest.raises(RuntimeError, match="pg_dump -Fc"):
            manage("backup", "--output", str(tmp_path / "x.tar.gz"))
    hostile = tmp_path / "hostile.tar.gz"
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    with tarfile.open(hostile, "w:gz") as archive:
        archive.add(outside, arcname="../outside.txt")
    with pytest.raises(RuntimeError, match="which no backup holds"):
        manage("restore", str(hostile), "--var-dir", str(tmp_path / "new"),
               env={"DATABASE_URL": None, "REDIS_URL": None, "VAR_DIR": str(tmp_path / "v")})
    assert not (tmp_path / "new").exists()
