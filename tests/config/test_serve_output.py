"""``manage.py serve --demo-tenant`` (what ``make run`` runs), as a real process: daphne, the
worker and beat start, and the demo tenant's keys and URLs come last, below their banners, and
stay last (the periodic sweeps' routine lines do not scroll them away); Ctrl-C stops it all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.live import ROOT, environment, free_port, manage

pytestmark = pytest.mark.live  # daphne, a Celery worker and beat

SWEEP_SECONDS = 5  # the shortest beat schedule (webhooks.sweep): its lines would come this often


def _wait_for(path, text: str, proc: subprocess.Popen, timeout: float = 90.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = path.read_text()
        if text in out:
            return out
        assert proc.poll() is None, f"serve exited early:\n{out}"
        time.sleep(0.3)
    raise AssertionError(f"no {text!r} after {timeout}s:\n{path.read_text()}")


def test_make_run_prints_the_keys_and_urls_last(tmp_path):
    env = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
           "ALLOWED_HOSTS": None, "VAR_DIR": str(tmp_path / "var"), "EMAIL_URL": None}
    manage("migrate", "--noinput", env=env)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--concurrency", "1", "--demo-tenant"],
            cwd=ROOT, env=environment(env), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own group: a failing test stops its children too
    try:
        text = _wait_for(log, "Serving on ", proc)
        lines = text.splitlines()

        def first(fragment: str) -> int:
            return next(i for i, line in enumerate(lines) if fragment in line)

        banners = [first(f"Listening on TCP address 127.0.0.1:{port}"), first("celery@"),
                   first(" ready."), first("beat: Starting")]
        block = first("Created the demo tenant.")
        assert max(banners) < block
        state = json.loads((tmp_path / "var" / "demo-tenant.json").read_text())
        keys = [first(raw) for mode in state["keys"].values() for raw in mode.values()]
        urls = [first(f"  Demo page:     {base}/demo/"), first(f"  Dashboard:     {base}/dashboard/")]
        assert block < min(keys) and max(keys) < min(urls)
        assert lines[-1] == f"Serving on {base}/ (Ctrl-C stops the server, the worker and beat)"
        # How to turn the metrics on (docs/operations.md), just above.
        assert lines[-2] == ("Metrics: off; METRICS_TOKEN=<a long random token> make run serves "
                             f"them on {base}/metrics (docs/operations.md)")
        # Beat's sweeps run every few seconds; their routine lines do not push the block up.
        time.sleep(SWEEP_SECONDS + 1)
        assert log.read_text().splitlines()[-1] == lines[-1]

        # What the block says works: the demo page, the widget on the server's local origins.
        demo = httpx.get(base + "/demo/")
        assert 'data-tenant="' + state["tenant"]["publicId"] in demo.text
        assert "server" not in demo.headers  # daphne --no-server-name
        r = httpx.get(f"{base}/api/widget?tenant={state['tenant']['publicId']}",
                      headers={"Origin": f"http://localhost:{port}"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == f"http://localhost:{port}"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
