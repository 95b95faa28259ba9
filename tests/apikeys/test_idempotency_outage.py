"""Idempotency-Key when the database goes away in the middle of a request (docs/idempotency.md,
"When the database goes away"), on a live daphne with PostgreSQL: the probe view ends its own
server connection (``pg_terminate_backend``) before or after its write, as a server that
restarts mid-request does, so that the key can be neither released nor completed in time."""

from __future__ import annotations

import json
import os
import uuid

import httpx
import pytest

from tests.live import daphne, manage, scratch_database

pytestmark = [
    pytest.mark.live,  # daphne
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="set DATABASE_URL (PostgreSQL): the probe ends its own server connection (CI "
               "runs the suite on PostgreSQL too)",
    ),
]


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> dict:
    with scratch_database(f"salesagent_idempotency_{os.getpid()}") as database:
        env = {"DATABASE_URL": database, "REDIS_URL": "",
               "VAR_DIR": str(tmp_path_factory.mktemp("idempotency")),
               "DJANGO_SETTINGS_MODULE": "tests.live_settings", "DEBUG": "0",
               "SECRET_KEY": "idempotency-outage", "ALLOWED_HOSTS": "127.0.0.1",
               "V1_REQUIRE_HTTPS": "0"}
        manage("migrate", "--noinput", env=env)
        created = json.loads(manage("create_tenant", "Idem Co", "--json", env=env))
        with daphne(env) as base:
            yield {"base": base,
                   "auth": {"Authorization": f"Bearer {created['keys']['live']['admin']}"}}


def _post(live, key: str, body: dict) -> httpx.Response:
    return httpx.post(f"{live['base']}/api/v1/_probe/keys", json=body, timeout=30,
                      headers={**live["auth"], "Idempotency-Key": key})


def test_a_2xx_whose_response_could_not_be_stored_stands_and_is_replayed(live, tmp_path):
    key = f"after-{uuid.uuid4().hex}"
    body = {"name": "kept", "lose_connection_after": str(tmp_path / "lost")}
    first = _post(live, key, body)
    # The key was created: the answer says so, though the database was gone before it could
    # be stored with the Idempotency-Key.
    assert first.status_code == 201, first.text
    again = _post(live, key, body)
    assert again.status_code == 201, again.text  # not 409 "still being processed"
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()


def test_a_request_that_lost_the_database_frees_its_key_for_the_retry(live, tmp_path):
    key = f"before-{uuid.uuid4().hex}"
    body = {"name": "retried", "lose_connection_before": str(tmp_path / "lost")}
    first = _post(live, key, body)
    assert first.status_code == 503, first.text
    assert first.json()["error"]["code"] == "service_unavailable"
    assert first.headers["Retry-After"] == "5"
    again = _post(live, key, body)
    assert again.status_code == 201, again.text  # runs, not 409 "still being processed"
    assert "Idempotent-Replayed" not in again.headers
    assert again.json()["name"] == "retried"
