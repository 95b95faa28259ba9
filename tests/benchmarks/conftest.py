"""The real servers of ``make bench`` (tests/benchmarks/harness.py) and its closing table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connections

from tests.benchmarks import harness
from tests.benchmarks.http import Connection
from tests.live import ROOT, _server_url, daphne, ensure_database, free_port, wait_for_port


@pytest.fixture(scope="session")
def bench_database(django_db_blocker) -> Iterator[str]:
    """The persistent benchmark database (``DATABASE_URL``'s name, with ``_bench`` appended
    unless it ends so already), migrated; its million-row tables survive between runs. Use it
    from a module with ``django_db_setup = bench_database_setup``."""
    if not settings.IS_POSTGRES:
        pytest.skip("make bench needs PostgreSQL: set DATABASE_URL (the Makefile's default is "
                    "postgres://postgres@127.0.0.1:5432/salesagent_bench)")
    default = connections["default"]
    original = default.settings_dict["NAME"]
    name = original if original.endswith("_bench") else f"{original}_bench"
    ensure_database(name)
    for conn in connections.all():
        conn.close()
    default.close_pool()  # its connections are to the database named before
    default.settings_dict["NAME"] = name
    with django_db_blocker.unblock():
        call_command("migrate", verbosity=0, interactive=False)
    yield name
    for conn in connections.all():
        conn.close()
    default.close_pool()
    default.settings_dict["NAME"] = original


@dataclass
class BareServer:
    url: str

    def register(self, path: str, statements: list[str]) -> None:
        with Connection(self.url) as connection:
            answer = connection.request(
                "POST", "/__statements",
                body=json.dumps({"path": path, "statements": statements}).encode())
        assert answer.status == 200, answer.body


@pytest.fixture(scope="session")
def service_env(bench_database) -> dict[str, str]:
    """The environment of the service's daphne (``service_server``): production settings on
    the benchmark database and Redis. A module that needs a server of its own (another setting
    to compare, or its process to look at) starts one with ``tests.live.daphne`` and this."""
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("make bench needs Redis: set REDIS_URL (the Makefile's default is "
                    "redis://127.0.0.1:6379/10)")
    return {
        "DATABASE_URL": _server_url(bench_database), "REDIS_URL": redis_url, "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-secret-key",
        "ALLOWED_HOSTS": "127.0.0.1,localhost", "TRUST_X_FORWARDED_PROTO": "1",
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture(scope="session")
def service_server(service_env) -> Iterator[str]:
    """daphne as ``make run`` serves (``--no-server-name config.asgi:application``), with
    production settings (DEBUG off, behind a proxy that terminates TLS), on the benchmark
    database and Redis. Yields its base URL (a ``tests.live.Server``, which also knows its
    process); send ``harness.PROXY_HEADERS`` with every request."""
    with daphne(service_env) as server:
        yield server


@pytest.fixture(scope="session")
def bare_server(bench_database) -> Iterator[BareServer]:
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.benchmarks.bare_server", "--port", str(port),
             "--dsn", _server_url(bench_database)], cwd=ROOT, stdout=log, stderr=log)
        try:
            wait_for_port(port, proc=proc)
            yield BareServer(f"http://127.0.0.1:{port}")
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def pytest_terminal_summary(terminalreporter) -> None:
    if not harness.AIMS and not any(table.rows for table in harness.TABLES.values()):
        return
    write = terminalreporter.write_line
    write("")
    write(harness.aims_markdown(harness.AIMS) if harness.AIMS else "(no aim was measured)")
    harness.record_aims()
    written = harness.write_doc()
    if written:
        write(f"docs/performance.md: regenerated {', '.join(sorted(written))}")
    measured = {name for name, table in harness.TABLES.items() if table.rows}
    missing = sorted((measured | {aim.section for aim in harness.AIMS}) - set(written))
    if missing:
        write(f"docs/performance.md has no generated block for {', '.join(missing)}")
