"""``manage.py serve`` (``make run``) with ``METRICS_TOKEN`` set, as a real process: it empties the
metrics directory of an earlier run before it starts its children, says where the metrics are,
and ``/metrics`` on its web process answers for the worker and beat too (issue 31; docs/
operations.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.live import ROOT, environment, free_port, manage

pytestmark = pytest.mark.live  # daphne, a Celery worker and beat

TOKEN = "serve-metrics-token-0123456789"


def _series(text: str) -> dict[tuple, float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_serve_empties_the_directory_and_serves_every_process_series(tmp_path):
    var = tmp_path / "var"
    env = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
           "ALLOWED_HOSTS": None, "VAR_DIR": str(var), "EMAIL_URL": None,
           "METRICS_TOKEN": TOKEN, "METRICS_DIR": None, "AGENT_WARM_UP": "false"}
    manage("migrate", "--noinput", env=env)
    # An earlier run's file, which the collector could not even read: it must be gone.
    stale = var / "metrics" / "counter_99999.db"
    stale.write_bytes(b"not a metrics file")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--concurrency", "1"],
            cwd=ROOT, env=environment(env), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own group: a failing test stops its children too
    try:
        deadline = time.monotonic() + 240  # a busy machine starts three Pythons slowly
        found: dict[tuple, float] = {}
        want = [("salesagent_celery_task_duration_seconds_count",
                 (("outcome", "success"), ("task", "webhooks.sweep"))),
                ("salesagent_process_up", (("process", "worker"),)),
                ("salesagent_process_up", (("process", "beat"),))]
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                answer = httpx.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
            except httpx.TransportError:
                time.sleep(0.5)
                continue
            assert answer.status_code == 200, answer.text
            found = _series(answer.text)
            if all(found.get(key, 0) >= 1 for key in want):
                break
            time.sleep(0.5)
        assert all(found.get(key, 0) >= 1 for key in want), {k: found.get(k) for k in want}
        assert not stale.exists()
        # The block of URLs comes once serve has seen the worker's and beat's ready lines, which
        # may be a moment after their series.
        line = f"Metrics: {base}/metrics with Authorization: Bearer $METRICS_TOKEN"
        while line not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert line in log.read_text()
        assert httpx.get(f"{base}/metrics").status_code == 401
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
