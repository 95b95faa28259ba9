"""The lead desk in a real browser (headless Chromium) at desktop and phone sizes, against daphne
and a real Celery worker on the embedded default (no eager tasks): a bulk action on every lead
matching a search, chosen with "select all on this page" and then "all N matching", and a CSV
import from its preview (the mapping guessed and changed, the rows' fates shown) to its result,
which the page follows through the status endpoint while the worker imports. Screenshots with
``SCREENSHOTS=1`` (``make screenshots``). And, on the same server, the CSV export to a client
that stops reading: daphne's memory stays as it was."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.browser import browser, screenshot
from tests.live import celery_worker, daphne, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne, a Celery worker and Chromium

SETUP = """
from datetime import timedelta
from django.utils import timezone
from leads.services import lead_create
from tenants.models import Tenant
from tenants.services import user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
now = timezone.now()
for i in range(30):
    lead_create(tenant=tenant, livemode=True, email="buyer%d@globex.example" % i,
                name="Buyer %d" % i, company="Globex", source="form",
                created_at=now - timedelta(minutes=i))
lead_create(tenant=tenant, livemode=True, email="ivy@initech.example", name="Ivy",
            company="Initech")
for size in ("desktop", "phone"):
    lead_create(tenant=tenant, livemode=True, email="olga.%s@initech.example" % size,
                name="Olga", company="Initech", tags=["customer"])
# Another tenant with 25 MB of leads to export (written around the services: only their
# rows matter to an export).
from leads.models import Lead
from tenants.services import tenant_create
big, _ = tenant_create(name="Bulk Co")
user_create(tenant=big, email="max@bulk.test", first_name="Max", role="manager",
            password={password!r})
notes = {{"notes": "x" * 1600}}
Lead.objects.bulk_create(
    (Lead(tenant=big, livemode=True, email="lead%d@bulk.example" % i,
          name="Lead number %d of a long export" % i, company="Bulk", custom_fields=notes)
     for i in range({big_leads})), batch_size=5000)
"""
BIG_LEADS = 15_000

SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    var = tmp_path_factory.mktemp("lead-desk")
    env = {**EMBEDDED, "VAR_DIR": str(var), "CELERY_TASK_ALWAYS_EAGER": None}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD,
                                       big_leads=BIG_LEADS), env=env)
    with browser() as chromium, daphne(env) as base, \
            celery_worker(env, var / "worker.log") as worker:
        yield {"base": base, "browser": chromium, "worker": worker, "log": var / "worker.log"}


@pytest.fixture(params=list(SIZES))
def page(request, stack):
    context = stack["browser"].new_context(viewport=SIZES[request.param])
    page = context.new_page()
    base = stack["base"]
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", "mia@acme.test")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
    page.size = request.param
    yield page
    context.close()


def _no_sideways_scroll(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_a_tag_added_to_every_lead_matching_a_search(stack, page):
    base, tag = stack["base"], f"expo-{page.size}"
    page.goto(base + "/dashboard/leads/?q=globex")
    bar = page.locator("#bulk")
    assert "30 in all" in page.locator("h1").inner_text()
    # Only the chosen action's value shows.
    page.select_option("#bulk-action", label="Add tag")
    assert page.locator("#bulk-tag").is_visible() and not page.locator("#bulk-status").is_visible()
    page.locator("[data-check-all]").check()
    assert bar.locator("input[name=lead]:checked").count() == 25
    offer = bar.locator("[data-select-all]")
    assert "All 25 leads on this page are checked." in offer.inner_text()
    offer.get_by_role("button", name="Select all 30 leads matching the filter").click()
    assert "All 30 leads matching the filter are selected." in offer.inner_text()
    assert page.locator("#bulk-scope").input_value() == "all"
    page.fill("#bulk-tag", tag)
    _no_sideways_scroll(page)
    screenshot(page, f"dashboard-leads-bulk-{page.size}.png", full_page=True)
    page.locator("#bulk-apply").click()
    page.wait_for_url(base + "/dashboard/leads/?q=globex")
    assert f"30 leads tagged “{tag}”." in page.locator(".messages").inner_text()
    assert page.locator("tbody .tag", has_text=tag).count() == 25
    screenshot(page, f"dashboard-leads-bulk-done-{page.size}.png", full_page=True)
    page.goto(base + "/dashboard/leads/?q=initech")
    assert page.locator("tbody .tag", has_text=tag).count() == 0  # no other lead


def test_an_import_from_its_preview_to_its_result(stack, page, tmp_path):
    base, size = stack["base"], page.size
    upload = tmp_path / f"trade-show-{size}.csv"
    upload.write_text(
        "E-mail;Full name;Organisation;Notes\n"
        f"ann.{size}@hooli.example;Ann Lee;Hooli;met at booth 4\n"
        f"olga.{size}@initech.example;Olga Petrova;Initech;wants a demo\n"
        "not an address;Nobody;;\n"
        f"ANN.{size}@hooli.example;Ann again;Hooli;\n"
        f"bo.{size}@umbrella.example;Bo;Umbrella;\n", encoding="utf-8")
    page.goto(base + "/dashboard/leads/")
    page.get_by_role("link", name="Import CSV").click()
    page.set_input_files("#id_file", str(upload))
    page.get_by_role("button", name="Upload and preview").click()
    page.wait_for_url(re.compile(r".*/dashboard/leads/import/[0-9a-f-]{36}/$"))
    preview_url = page.url
    # The mapping guessed from the header; Notes would become a custom field.
    assert page.locator("#id_map_0").input_value() == "email"
    assert page.locator("#id_map_1").input_value() == "name"
    assert page.locator("#id_map_2").input_value() == "company"
    assert page.locator("#id_map_3").input_value() == "custom"
    outcomes = page.locator("td.outcome .pill").all_inner_texts()
    assert outcomes == ["New lead", "Updates a lead", "Refused", "Refused", "New lead"]
    refused = page.locator("tr.refused").all_inner_texts()
    assert "E-mail: Enter a valid email address." in refused[0]
    assert "The same email address as row 2." in refused[1]
    page.select_option("#id_map_3", label="Do not import")
    page.get_by_role("button", name="Check the preview").click()
    page.wait_for_url(preview_url)
    assert page.locator("#id_map_3").input_value() == ""
    _no_sideways_scroll(page)
    screenshot(page, f"dashboard-import-preview-{size}.png", full_page=True)

    page.get_by_role("button", name="Import 5 rows").click()
    page.wait_for_url(preview_url)
    # The worker imports; the page follows the status endpoint and shows the result.
    page.get_by_role("link", name="See the imported leads").wait_for(timeout=60_000)
    stats = {name: page.locator(f"[data-count={name}]").inner_text()
             for name in ("created", "updated", "skipped", "failed")}
    assert stats == {"created": "2", "updated": "1", "skipped": "0", "failed": "2"}, \
        stack["log"].read_text()[-2000:]
    assert page.locator("progress").get_attribute("value") == "100"
    errors = page.locator("#row-errors tbody tr").all_inner_texts()
    assert [line.split("\t")[0] for line in errors] == ["4", "5"]
    assert "not an address" not in page.content()
    _no_sideways_scroll(page)
    screenshot(page, f"dashboard-import-result-{size}.png", full_page=True)
    page.get_by_role("link", name="See the imported leads").click()
    rows = page.locator("tbody tr").all_inner_texts()
    assert any(f"ann.{size}@hooli.example" in row for row in rows)
    assert not any(f"olga.{size}@" in row for row in rows)  # updated, still from its own source


def _rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def test_a_slow_client_is_sent_the_export_no_faster_than_it_reads(stack):
    """daphne keeps what the socket cannot take in memory: the export is paced by Twisted's
    producer protocol (config/handlers.py, ``_paced``), so a client that stops reading leaves
    the server's memory as it was, not 25 MB fuller (18 MB fuller without the pacing)."""
    base = stack["base"]
    with httpx.Client(base_url=base) as client:
        client.get("/dashboard/login/")
        client.post("/dashboard/login/", data={
            "username": "max@bulk.test", "password": PASSWORD,
            "csrfmiddlewaretoken": client.cookies["csrftoken"]})
        session = client.cookies["sessionid"]
        # Warms the server up, twice: its allocator keeps the arenas of a whole export after
        # the second, so what follows measures what is held, not what is allocated anew.
        for _ in range(2):
            whole = client.get("/dashboard/leads/export/").content
    assert len(whole) > 25_000_000 and whole.count(b"\n") == BIG_LEADS + 1
    before = _rss_mb(base.process.pid)
    with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1]))) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        sock.sendall(f"GET /dashboard/leads/export/ HTTP/1.1\r\nHost: {base[7:]}\r\n"
                     f"Cookie: sessionid={session}\r\nConnection: close\r\n\r\n".encode())
        received = sock.recv(65536)
        time.sleep(2)  # the client reads nothing; the database could send it all meanwhile
        # What is held stays; a passing allocation (a busy machine's timing) does not: the
        # least of a few readings.
        readings = []
        for _ in range(4):
            time.sleep(0.5)
            readings.append(_rss_mb(base.process.pid) - before)
        grown = min(readings)
        while chunk := sock.recv(1 << 20):
            received += chunk
    assert grown < 8, f"the server's memory grew by {grown:.1f} MB for a client that waited"
    assert received.count(b"\n") > BIG_LEADS  # all of it arrived in the end
