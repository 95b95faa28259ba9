"""The schema endpoints under concurrent first requests, through daphne: drf-spectacular
generates a schema with process-wide state (its settings patched with the view's title, its
extensions loaded lazily), so two first requests at once answered 500 before the schema views
took a lock (config/api/views.py, SchemaView)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None}


def test_first_requests_at_once_all_get_their_own_schema(tmp_path):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path)}
    manage("migrate", "--noinput", env=env)
    with daphne(env) as base, ThreadPoolExecutor(8) as pool:
        paths = ["/api/schema", "/api/v1/schema"] * 4
        answers = list(pool.map(lambda path: (path, httpx.get(base + path, timeout=60)), paths))
    for path, r in answers:
        assert r.status_code == 200, (path, r.text[:300])
        title = r.json()["info"]["title"]
        assert title == ("Sales Agent Service API (v1)" if "/v1/" in path
                         else "Sales Agent Service API (legacy)"), (path, title)
