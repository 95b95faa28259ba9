"""The CSV export of a million leads through the real server, against PostgreSQL's bare
``COPY (SELECT ...) TO STDOUT WITH (FORMAT csv)`` of the same statement, interleaved; and the
server's memory while it streams (docs/performance.md, "CSV export").

``make bench BENCH=tests/benchmarks/test_lead_export_bench.py`` (tests/benchmarks/harness.py):
daphne with production settings on PostgreSQL and Redis. The leads are the lead benchmark's
million (``test_leads_bench.SEED_SQL``: one ``INSERT ... SELECT generate_series`` with the
indexes dropped and rebuilt after it, the search rows by ``lead_search_rebuild``, the counts by
``lead_counts_rebuild``), seeded once and shared with it.

- **Service**: ``GET /dashboard/leads/export/`` as a manager signed in (a session made in this
  process), over HTTP/1.1, the body read to its last chunk and dropped.
- **Bare**: the statement the export runs (``leads.export.export_statement``, the very SQL and
  parameters) as ``COPY ... TO STDOUT`` through psycopg from this process, every row read and
  dropped: what is left is PostgreSQL's own work and the transfer.
- **Memory**: the daphne process's resident set (``VmRSS``), sampled every 20 ms during each
  export, against its size just before: the largest growth of any round, the warm-up's
  included (the first export of the process), once the process has settled (it loads the
  agent's models on a thread of its own after it starts).

Aims (issue 29): the export at most 2× the bare copy at the median; its growth at most 100 MB.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from django.db import connection
from django.test import Client

from leads.export import HEADER, export_statement
from leads.models import Lead, LeadDailyCount
from tenants.models import Plan, Tenant, User
from tenants.services import user_create
from tests.benchmarks import harness
from tests.benchmarks.harness import check, interleave, ms, ratio_cell
from tests.benchmarks.test_leads_bench import LEADS, TENANT_ID, _seed
from tests.live import _server_url

pytestmark = pytest.mark.bench

ROUNDS = 5
RSS_AIM_MB = 100.0
RATIO_AIM = 2.0
MANAGER = "export-bench@bench.test"


@pytest.fixture(scope="session")
def django_db_setup(bench_database):
    return bench_database


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _settled(pid: int, *, still_for: float = 5.0, at_most: float = 180.0) -> float:
    """Waits until the server's resident set has stayed within 1 MB for ``still_for`` seconds:
    a fresh daphne loads the agent's models on a thread of its own after it starts listening
    (``config.serving.warm_up_the_agent``), some 80 MB that would otherwise count as the first
    export's. Returns the size."""
    deadline = time.monotonic() + at_most
    size, since = _rss_mb(pid), time.monotonic()
    while time.monotonic() - since < still_for and time.monotonic() < deadline:
        time.sleep(0.5)
        now = _rss_mb(pid)
        if abs(now - size) > 1:
            size, since = now, time.monotonic()
    return size


class Sampler:
    """The largest resident set of process ``pid`` while it runs (every 20 ms)."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_mb(self.pid))
            self._stop.wait(0.02)

    def __enter__(self) -> Sampler:
        self.peak = _rss_mb(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb(self.pid))


def download(base_url: str, path: str, headers: dict[str, str]) -> tuple[int, int, bytes]:
    """GET ``path`` over a new HTTP/1.1 connection; the body read to its last chunk and
    dropped. Returns the status, the body's size and its first 64 KB."""
    parts = urlsplit(base_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=120) as sock:
        lines = [f"GET {path} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close",
                 *(f"{name}: {value}" for name, value in headers.items())]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            buffer += sock.recv(65536)
        head, _, rest = buffer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        chunked = b"transfer-encoding: chunked" in head.lower()
        return (status, *_body(sock, rest, chunked))


def _body(sock: socket.socket, data: bytes, chunked: bool) -> tuple[int, bytes]:
    """The size of a body (chunked: its chunks' sizes, framing left out) and its start."""
    size, start = 0, bytearray()
    view = bytearray(data)

    def more() -> bool:
        received = sock.recv(1 << 20)
        view.extend(received)
        return bool(received)

    if not chunked:
        while more():
            pass
        return len(view), bytes(view[:65536])
    position = 0
    while True:
        while (end := view.find(b"\r\n", position)) < 0:
            if not more():
                raise RuntimeError("the stream ended inside a chunk header")
        length = int(bytes(view[position:end]).split(b";")[0], 16)
        if length == 0:
            return size, bytes(start)
        begin, stop = end + 2, end + 2 + length
        while len(view) < stop + 2:
            if not more():
                raise RuntimeError("the stream ended inside a chunk")
        if len(start) < 65536:
            start.extend(view[begin:min(stop, begin + 65536 - len(start))])
        size += length
        del view[:stop + 2]
        position = 0


@pytest.fixture(scope="module")
def export_bench(django_db_setup, django_db_blocker, service_server):
    with django_db_blocker.unblock():
        connection.set_autocommit(True)
        tenant, _ = Tenant.objects.get_or_create(
            pk=TENANT_ID, defaults={"name": "Benchmark", "plan": Plan.ENTERPRISE})
        counted = sum(LeadDailyCount.objects.filter(tenant=tenant, livemode=True)
                      .values_list("count", flat=True))
        if counted != LEADS or Lead.objects.filter(tenant=tenant).count() != LEADS:
            print(f"\nSeeded {LEADS:,} leads in {_seed(tenant):.0f} s")
        manager = User.objects.filter(tenant=tenant, email=MANAGER).first() or user_create(
            tenant=tenant, email=MANAGER, first_name="Bench", role="manager")
        client = Client()
        client.force_login(manager)
        sql, params = export_statement(tenant=tenant, livemode=True)
        _settled(service_server.process.pid)
        yield {
            "url": service_server, "pid": service_server.process.pid,
            "headers": {**harness.PROXY_HEADERS,
                        "Cookie": f"sessionid={client.cookies['sessionid'].value}"},
            "copy": (f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", params),
        }


EXPORT = harness.table("lead-export", [
    "Case", "Service median / p95 ms", "Bare COPY median / p95 ms",
    "Ratio of medians (IQR of rounds)", "MB sent", "Server RSS growth, largest (MB)"])


def test_export_of_a_million_leads(export_bench):
    url, pid, headers = export_bench["url"], export_bench["pid"], export_bench["headers"]
    statement, params = export_bench["copy"]
    growth: list[float] = []
    sizes: dict[str, int] = {}
    starts: dict[str, bytes] = {}

    def ours() -> float:
        before = _rss_mb(pid)
        started = time.perf_counter()
        with Sampler(pid) as sampler:
            status, size, start = download(url, "/dashboard/leads/export/", headers)
        elapsed = time.perf_counter() - started
        assert status == 200, start[:500]
        growth.append(sampler.peak - before)
        sizes["service"], starts["service"] = size, start
        return elapsed * 1000

    with psycopg.connect(_server_url(connection.settings_dict["NAME"]),
                         autocommit=True) as bare:

        def theirs() -> float:
            size, start = 0, bytearray()
            started = time.perf_counter()
            with bare.cursor() as cursor, cursor.copy(statement, params) as copy:
                for row in copy:
                    size += len(row)
                    if len(start) < 65536:
                        start.extend(row)
            elapsed = time.perf_counter() - started
            sizes["bare"], starts["bare"] = size, bytes(start)
            return elapsed * 1000

        result = interleave(ours, theirs, rounds=ROUNDS, warmup=1)

    # The same rows, byte for byte: the service sends the header, then PostgreSQL's CSV.
    header = HEADER.encode()
    assert sizes["service"] == len(header) + sizes["bare"]
    assert starts["service"].startswith(header)
    body = starts["service"][len(header):]
    shared = min(len(body), len(starts["bare"]))
    assert shared > 60000 and body[:shared] == starts["bare"][:shared]
    # Every export counts, the warm-up round's too (the first export of the process).
    worst = max(growth)
    EXPORT.rows.append([
        f"GET /dashboard/leads/export/ ({LEADS:,} leads)",
        f"{ms(result.service.median)} / {ms(result.service.p95)}",
        f"{ms(result.baseline.median)} / {ms(result.baseline.p95)}",
        ratio_cell(result), f"{sizes['service'] / 1e6:,.0f}",
        f"{worst:.1f} (rounds: {', '.join(f'{g:.0f}' for g in growth)})"])
    check("lead-export", "CSV export of 1M leads: median vs bare COPY", result.ratio, RATIO_AIM)
    check("lead-export", "CSV export of 1M leads: server RSS growth", worst, RSS_AIM_MB,
          unit=" MB")
