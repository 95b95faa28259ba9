"""A fuzzer nobody here wrote, over both surfaces: schemathesis generates requests from each
OpenAPI schema (``/api/v1/schema``, ``/api/schema``) and sends them to daphne serving the
service with production settings, with an admin key. Any 5xx, any response that breaks its
schema and any wrong content type fails the test.

The budget is bounded (``FUZZ_SECONDS`` per surface, 60 by default) and the seed fixed, so a run
is repeatable; README.md has the command for a longer run. Rate limits are off for the fuzzer's
tenant only in the sense that the server runs with ``RATE_LIMIT_ENABLED=0``: with them on, the
fuzzer would mostly measure 429s. schemathesis runs from its own virtualenv (``make fuzzer``,
which ``make test`` runs): see pyproject.toml's ``fuzz`` extra."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.live import ROOT, daphne, manage, scratch_database

pytestmark = pytest.mark.live  # daphne, and schemathesis in a subprocess

ST = ROOT / ".venv-fuzz" / "bin" / "st"
SECONDS = int(os.environ.get("FUZZ_SECONDS", "60"))
SEED = os.environ.get("FUZZ_SEED", "1")
# What a response must satisfy (docs/security.md, "The fuzzer"): no server error, the schema's
# shapes, status codes and content types.
CHECKS = ("not_a_server_error", "response_schema_conformance", "content_type_conformance",
          "status_code_conformance")
PRODUCTION = {"DEBUG": "0", "SECRET_KEY": "fuzz-secret-key-0123456789abcdef",
              "ALLOWED_HOSTS": "127.0.0.1,localhost", "V1_REQUIRE_HTTPS": "0",
              "RATE_LIMIT_ENABLED": "0"}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """daphne with production settings on a database of its own: a scratch PostgreSQL database
    when the suite runs on PostgreSQL, an SQLite file otherwise."""
    if not ST.exists():
        pytest.fail(f"schemathesis is not installed at {ST}: run make fuzzer (make test does)")
    var = tmp_path_factory.mktemp("fuzz-var")
    env = {**PRODUCTION, "VAR_DIR": str(var)}
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        with scratch_database("salesagent_fuzz_test") as database:
            yield from _serve({**env, "DATABASE_URL": database})
    else:
        yield from _serve({**env, "DATABASE_URL": None})  # the embedded default, in VAR_DIR


def _serve(env: dict[str, str | None]):
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Fuzz Inc", "--json", env=env))
    with daphne(env) as base:
        yield {"base": base, "key": created["keys"]["live"]["admin"], "log": base.log}


@pytest.mark.parametrize("schema", ["/api/v1/schema", "/api/schema"])
def test_no_server_error_and_no_broken_promise(service, schema, tmp_path):
    report = tmp_path / "report"
    command = [str(ST), "run", f"{service['base']}{schema}",
               "--header", f"Authorization: Bearer {service['key']}",
               "--checks", ",".join(CHECKS), "--max-time", str(SECONDS), "--seed", SEED,
               # One worker: with threads, CPython 3.11's ast.parse (which hypothesis calls to
               # describe its filters) can fail with "AST constructor recursion depth mismatch".
               "--workers", "1", "--no-color",
               # Hypothesis's own check that generating is fast enough fails on a busy machine
               # (the pattern-heavy legacy lead update): a fact about the generator, not the service.
               "--suppress-health-check", "too_slow", "--report", "junit", "--report-dir", str(report)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=SECONDS + 240,
                          env={**os.environ, "NO_COLOR": "1"}, cwd=tmp_path)  # its .schemathesis/
    summary = _summary(proc.stdout)
    assert proc.returncode == 0, f"schemathesis found failures ({summary}):\n{proc.stdout[-12000:]}"
    assert " passed" in summary and "generated" in summary, proc.stdout[-3000:]
    print(f"{schema}: {summary}")
    assert "Traceback" not in Path(service["log"]).read_text(errors="replace")


def _summary(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if "generated" in line]
    return lines[-1] if lines else "no summary"
