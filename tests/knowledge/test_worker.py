"""The knowledge base on the running service: daphne and a real Celery worker on one embedded
default (SQLite files for the data and the broker in one temporary VAR_DIR). An upload answers at
once with ``processing``; the worker picks it up after the commit and makes it ``ready``; the
agent answers from it; a hostile file ends ``failed`` and the worker carries on."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests import knowledge_files as files
from tests.live import celery_worker, daphne, manage

pytestmark = pytest.mark.live  # a Celery worker

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0"}


TIMEOUT = 30  # seconds per request: generous, as the test machine may be busy


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    var = tmp_path_factory.mktemp("var")
    env = {**EMBEDDED, "VAR_DIR": str(var), "KNOWLEDGE_PARSE_TIMEOUT_SECONDS": "20"}
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Readers", "--json", env=env))
    keys = created["keys"]["live"]
    with daphne(env) as base, celery_worker(env, var / "worker.log") as worker:
        yield {"base": base, "write": {"Authorization": f"Bearer {keys['write']}"},
               "admin": {"Authorization": f"Bearer {keys['admin']}"}, "worker": worker,
               "worker_log": var / "worker.log"}


def wait_for(stack, doc_id, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        document = httpx.get(f"{stack['base']}/api/v1/knowledge-base/{doc_id}",
                             headers=stack["write"], timeout=TIMEOUT).json()
        if document["status"] != "processing":
            return document
        assert stack["worker"].poll() is None, stack["worker_log"].read_text()[-2000:]
        time.sleep(0.25)
    raise AssertionError(f"document {doc_id} still processing after {timeout} s:\n"
                         + stack["worker_log"].read_text()[-2000:])


def ask(stack, question, visitor):
    r = httpx.post(f"{stack['base']}/api/v1/chat", headers=stack["write"], timeout=TIMEOUT,
                   json={"message": question, "visitorId": visitor})
    assert r.status_code == 200, r.text
    return r.json()["content"]


def test_the_worker_indexes_an_upload_and_the_agent_answers_from_it(stack):
    pdf = files.make_pdf([["Getting started"],
                          ["Installing the widget", "", "Paste the script tag before the closing body tag."]],
                         compress=True)
    r = httpx.post(f"{stack['base']}/api/v1/knowledge-base", headers=stack["write"],
                   files={"file": ("install.pdf", pdf, "application/pdf")},
                   data={"title": "Install guide", "url": "https://readers.example/install"},
                   timeout=TIMEOUT)
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "processing"
    document = wait_for(stack, r.json()["id"])
    assert document["status"] == "ready" and document["pageCount"] == 2, document

    answer = ask(stack, "Where do I paste the script tag of the widget?", "reader-1")
    assert "Paste the script tag before the closing body tag." in answer
    assert answer.startswith('According to "Install guide": ')

    r = httpx.delete(f"{stack['base']}/api/v1/knowledge-base/{document['id']}",
                     headers=stack["admin"], timeout=TIMEOUT)
    assert r.status_code == 204
    answer = ask(stack, "Where do I paste the script tag of the widget?", "reader-2")
    assert "Paste the script tag" not in answer


def test_a_hostile_file_fails_and_the_worker_carries_on(stack):
    r = httpx.post(f"{stack['base']}/api/v1/knowledge-base", headers=stack["write"],
                   files={"file": ("bomb.pdf", files.bomb_pdf(), "application/pdf")},
                   data={"title": "Bomb"}, timeout=TIMEOUT)
    assert r.status_code == 201, r.text
    failed = wait_for(stack, r.json()["id"])
    assert failed["status"] == "failed"
    assert failed["failureReason"] == "The PDF expands beyond the size limit when decompressed."

    r = httpx.post(f"{stack['base']}/api/v1/knowledge-base", headers=stack["write"],
                   json={"title": "FAQ", "type": "faq",
                         "content": "Q: Is there a free trial?\nA: Yes, for 14 days."},
                   timeout=TIMEOUT)
    assert wait_for(stack, r.json()["id"])["status"] == "ready"
    assert stack["worker"].poll() is None
