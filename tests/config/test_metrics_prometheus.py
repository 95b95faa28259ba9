"""The metrics through a real Prometheus server (issue 31, "Metrics"; docs/operations.md).

daphne and a Celery worker with beat inside share one multiprocess directory, as under
``manage.py serve``; Debian's ``prometheus`` (``make prometheus`` installs it) scrapes daphne's
``/metrics`` every second with the bearer token and loads ``deploy/alerts.yml``. After traffic,
PromQL through Prometheus's HTTP API finds the series and their values: requests by route
template and status, rate-limit refusals, a chat turn, the worker's tasks (through the shared
directory), the scrape-time gauges; every query of ``deploy/grafana-dashboard.json`` is
accepted. ``promtool`` checks and unit-tests the alert rules.

On a scratch PostgreSQL database with the run's Redis when the suite runs on them, on SQLite
files otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live import ROOT, celery_worker, daphne, free_port, manage, scratch_database, wait_for_port

PROMETHEUS = os.environ.get("PROMETHEUS", "/usr/bin/prometheus")
PROMTOOL = os.environ.get("PROMTOOL", "/usr/bin/promtool")
TOKEN = "prometheus-live-test-token-0123456789"
DEPLOY = ROOT / "deploy"

pytestmark = pytest.mark.live

ENV = {"DEBUG": "0", "SECRET_KEY": "metrics-live-secret-key-0123456789", "V1_REQUIRE_HTTPS": "0",
       "ALLOWED_HOSTS": "127.0.0.1,localhost", "AGENT_WARM_UP": "false",
       "AGENT_UNDERSTANDING": "rules", "METRICS_TOKEN": TOKEN, "METRICS_DIR": None}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """daphne and a worker with beat on one database and one metrics directory; yields the
    base URL, the tenant's keys and the variable directory."""
    var = tmp_path_factory.mktemp("var")
    env = {**ENV, "VAR_DIR": str(var)}
    if os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL"):
        with scratch_database(f"salesagent_metrics_live_{os.getpid()}") as database:
            yield from _serve({**env, "DATABASE_URL": database,
                               "CACHE_KEY_PREFIX": f"metrics-{uuid.uuid4().hex[:8]}"}, var)
    else:
        yield from _serve({**env, "DATABASE_URL": None, "REDIS_URL": None}, var)


def _serve(env: dict, var: Path):
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Metrics Co", "--plan", "enterprise", "--json",
                                env=env))
    # A machine busy with other suites starts daphne slowly: the series are what is tested.
    with daphne(env, startup_seconds=120) as base, \
            celery_worker(env, var / "worker.log", beat=True):
        yield base, created["keys"]["live"], var


@contextlib.contextmanager
def prometheus(target: str, tmp_path: Path) -> Iterator[str]:
    """Prometheus scraping ``target``'s /metrics every second with the token, with the alert
    rules loaded; yields its base URL."""
    port = free_port()
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["{DEPLOY / 'alerts.yml'}"]
scrape_configs:
  - job_name: salesagent
    metrics_path: /metrics
    authorization:
      credentials_file: "{tmp_path / 'token'}"
    static_configs:
      - targets: ["{target.removeprefix('http://')}"]
""")
    with open(tmp_path / "prometheus.log", "wb") as log:
        proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, timeout=30, proc=proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def query(prom: str, promql: str) -> list[dict]:
    answer = httpx.get(f"{prom}/api/v1/query", params={"query": promql}, timeout=10).json()
    assert answer["status"] == "success", (promql, answer)
    return answer["data"]["result"]


def scalar(prom: str, promql: str) -> float | None:
    result = query(prom, promql)
    return float(result[0]["value"][1]) if result else None


def eventually(prom: str, promql: str, expected, *, timeout: float = 180.0) -> float | None:
    """The query's value once it equals ``expected`` (a value, or a test of the value)."""
    test = expected if callable(expected) else (lambda got: got == expected)
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = scalar(prom, promql)
        if got is not None and test(got):
            return got
        time.sleep(0.5)
    raise AssertionError(f"{promql} = {got} after {timeout:g} s")


def test_prometheus_scrapes_every_process_series(service, tmp_path):
    base, keys, var = service
    lead_id = f"lead_{uuid.uuid4().hex}"
    with prometheus(base, tmp_path) as prom, httpx.Client(base_url=base, timeout=30) as client:
        eventually(prom, 'up{job="salesagent"}', 1)
        read = {"Authorization": f"Bearer {keys['read']}"}
        for _ in range(5):
            assert client.get("/api/v1/users", headers=read).status_code == 200
        assert client.get(f"/api/v1/leads/{lead_id}", headers=read).status_code == 404
        # Health's public budget is 60 a minute per address: past it, 429s (a slow machine may
        # cross a minute's boundary on the way, which starts the count again).
        refused = 0
        for _ in range(250):
            refused += client.get("/api/health").status_code == 429
            if refused == 3:
                break
        assert refused == 3
        turn = client.post("/api/v1/chat", headers={"Authorization": f"Bearer {keys['write']}"},
                           json={"message": "Hi, what do you sell?", "visitorId": "visitor-1"})
        assert turn.status_code == 200, turn.text

        users = 'salesagent_http_requests_total{surface="v1",route="/api/v1/users",method="GET"'
        eventually(prom, f'sum({users},status="200"}})', 5)
        assert scalar(prom, 'sum(salesagent_http_request_duration_seconds_count'
                            '{route="/api/v1/users"})') == 5
        assert scalar(prom, 'sum(salesagent_http_requests_total{route="/api/v1/leads/<id>",'
                            'status="404"})') == 1
        assert scalar(prom, 'sum(salesagent_http_requests_total{surface="legacy",'
                            'route="/api/health",status="429"})') == refused
        assert scalar(prom, 'sum(salesagent_rate_limit_refusals_total{limit="address"})') == refused
        # The turn came after the requests above: a later scrape has it.
        assert eventually(prom, 'sum(salesagent_chat_turns_total{agent="builtin",path="builtin"})',
                          1) == 1
        assert scalar(prom, "sum(salesagent_chat_turn_duration_seconds_count)") == 1
        # The worker's series, from its own processes, through the shared directory.
        eventually(prom, 'sum(salesagent_celery_task_duration_seconds_count'
                         '{task="webhooks.sweep",outcome="success"})', lambda n: n >= 1)
        eventually(prom, "time() - max(salesagent_celery_last_task_timestamp_seconds)",
                   lambda age: age < 30)
        # Scrape time: the database's backlogs, the broker's queue, the breakers.
        assert scalar(prom, 'salesagent_work_waiting{kind="webhook_delivery",state="pending",'
                            'mode="live"}') == 0
        assert scalar(prom, "salesagent_handoffs_waiting") == 0
        assert scalar(prom, 'salesagent_knowledge_documents{state="ready",mode="live"}') == 0
        # The embedded default's broker is a SQLite file that the worker and beat write too: on a
        # busy machine one scrape's read may time out (broker_up 0 then); the next answers.
        eventually(prom, 'salesagent_celery_queue_depth{queue="celery"}', lambda depth: depth >= 0)
        eventually(prom, "salesagent_broker_up", 1)
        pool = scalar(prom, 'salesagent_db_pool_connections{state="max"}')
        assert pool == (20 if os.environ.get("DATABASE_URL", "").startswith("postgres") else None)
        # No path, id or tenant in any label.
        assert query(prom, f'{{__name__=~"salesagent_.+",route=~".*{lead_id}.*"}}') == []
        assert query(prom, '{__name__=~"salesagent_.+",tenant!=""}') == []
        # The dashboard's queries and the alert rules, as Prometheus reads them.
        dashboard = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
        exprs = [target["expr"] for panel in dashboard["panels"]
                 for target in panel.get("targets", [])]
        assert len(exprs) >= 20
        for expr in exprs:
            query(prom, expr)
        assert scalar(prom, 'sum(rate(salesagent_http_requests_total{route="/api/v1/users"}[1m]))'
                      ) is not None
        rules = httpx.get(f"{prom}/api/v1/rules", timeout=10).json()["data"]["groups"]
        assert {rule["name"] for group in rules for rule in group["rules"]} == {
            "SalesAgentWorkOverdue", "SalesAgentWebhookDeliveriesFailing",
            "SalesAgentHigh5xxRate", "SalesAgentWorkerDown", "SalesAgentMetricsDown"}
        assert all(rule["health"] == "ok" for group in rules for rule in group["rules"])


def test_the_alert_rules_pass_promtool():
    checked = subprocess.run([PROMTOOL, "check", "rules", "alerts.yml"], cwd=DEPLOY,
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 5 rules found" in checked.stdout
    tested = subprocess.run([PROMTOOL, "test", "rules", "alerts.test.yml"], cwd=DEPLOY,
                            capture_output=True, text=True, timeout=60)
    assert tested.returncode == 0, tested.stdout + tested.stderr
