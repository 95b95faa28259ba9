"""Attachments in Chromium against a real daphne process (docs/widget.md and docs/dashboard.md,
"Attachments"), at desktop and phone sizes: a visitor on a customer's site, in a conversation a
rep has, attaches an image and a PDF in the widget, and the rep's open conversation page shows
them at once (a thumbnail, a download link); the rep attaches an image to a reply and the
visitor's open widget shows it at once; an SVG is refused in the widget with the reason and
nothing shown as sent. Under the dashboard's Content-Security-Policy, with no violation.
Screenshots with ``SCREENSHOTS=1``."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib

import pytest

from tests.browser import HostSite, browser, screenshot, sign_in, watch_csp
from tests.live import ROOT, daphne, environment, manage

from .test_browser import EMBEDDED

pytestmark = pytest.mark.live  # daphne and Chromium

PASSWORD = "attachments-browser-password"
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True,
         "has_touch": True}
PDF = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'

SETUP = """
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, user_create
tenant = Tenant.objects.get(pk={tenant!r})
tenant_set_allowed_origins(tenant=tenant, origins=[{origin!r}])
ray = user_create(tenant=tenant, email="ray@acme.test", first_name="Ray", last_name="Rep",
                  password={password!r})
# Ray works every hour of every day: his open page alone makes him the one handoffs go to.
ray.working_hours = {{"days": list(range(7)), "start_hour": 0, "end_hour": 24}}
ray.save()
"""


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour with a lighter band: something to see in a screenshot."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    light = bytes(min(255, c + 90) for c in rgb)
    rows = b"".join(b"\x00" + (light if height // 3 < y < 2 * height // 3 else bytes(rgb)) * width
                    for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _migrate(env) -> None:
    """``manage.py migrate`` with more time than ``manage``'s two minutes: on a machine shared
    by several test runs, the embedded database's migrations alone have taken longer."""
    proc = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT,
                          env=environment(env), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    # The agent's models load at the first turn, not before daphne listens: on a busy machine
    # that start-up outlasts the port's wait (the first turn gets the time instead).
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("attachments")), "AGENT_WARM_UP": "0"}
    _migrate(env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    with daphne(env, startup_seconds=180) as base:  # a slow start on a busy machine (_migrate)
        site = HostSite(base, acme["tenant"]["publicId"])
        manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], origin=site.origin,
                                            password=PASSWORD), env=env)
        with browser() as chromium:
            yield {"base": base, "site": site, "browser": chromium, "var": env["VAR_DIR"]}
        site.close()


def _sign_in(stack, device: dict):
    context = stack["browser"].new_context(**device)
    violations = watch_csp(context)
    page = context.new_page()
    sign_in(page, stack["base"], "ray@acme.test", PASSWORD)
    return context, page, violations


def _visitor(stack, device: dict):
    context = stack["browser"].new_context(**device)
    page = context.new_page()
    page.goto(stack["site"].origin + "/")
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    page.locator("button.launcher").click()
    page.locator("#sw-input").wait_for()
    return context, page


def _idle(visitor, timeout: int = 15000) -> None:
    visitor.wait_for_function(
        "() => document.querySelector('[data-service-widget]').shadowRoot"
        ".querySelector('.log').getAttribute('aria-busy') === 'false'", timeout=timeout)


def _say(visitor, text: str, timeout: int = 15000) -> None:
    visitor.locator("#sw-input").fill(text)
    visitor.locator("#sw-input").press("Enter")
    _idle(visitor, timeout)


def _attach(visitor, name: str, mime: str, data: bytes) -> None:
    visitor.locator("input[type=file]").set_input_files(
        files=[{"name": name, "mimeType": mime, "buffer": data}])
    _idle(visitor)


def _loaded(page, selector: str) -> None:
    """The image shows: fetched, decoded, drawn (not a broken-image icon)."""
    page.wait_for_function(
        "(s) => { const r = document.querySelector('[data-service-widget]');"
        " const i = (r ? r.shadowRoot : document).querySelector(s);"
        " return i && i.complete && i.naturalWidth > 0; }", arg=selector, timeout=10000)


@pytest.mark.parametrize("device,size", [(DESKTOP, "desktop"), (PHONE, "phone")])
def test_files_go_both_ways_live(stack, device, size):
    base = stack["base"]
    ray_context, ray, violations = _sign_in(stack, device)
    visitor_context, visitor = _visitor(stack, device)
    try:
        _say(visitor, "Hi, I'm Carl from Initech, carl@initech.test", timeout=120000)
        _say(visitor, "I want to talk to a person about your pricing")
        visitor.locator(".notice", has_text="Ray").first.wait_for(timeout=10000)
        session = visitor.evaluate("ServiceWidget.sessionId")
        ray.goto(f"{base}/dashboard/conversations/{session}/")
        ray.locator("#reply-form").wait_for()
        ray.wait_for_timeout(500)  # its event stream is open

        # The visitor's image, then their PDF with a line of text: on Ray's page at once.
        _attach(visitor, "floor plan.png", "image/png", png(320, 200, (234, 88, 12)))
        _loaded(visitor, ".msg.user .file img")
        ray.locator("#transcript .bubble.user .attachment.image img").wait_for(timeout=5000)
        _loaded(ray, "#transcript .bubble.user .attachment.image img")
        visitor.locator("#sw-input").fill("And our current contract")
        _attach(visitor, "contract.pdf", "application/pdf", PDF)
        link = ray.locator("#transcript .bubble.user .attachment.file", has_text="contract.pdf")
        link.wait_for(timeout=5000)
        assert ray.locator("#transcript .bubble.user", has_text="And our current contract").count() == 1
        href = link.get_attribute("href")
        assert href.startswith(f"/dashboard/conversations/{session}/attachments/")
        assert link.get_attribute("download") == "contract.pdf"
        assert visitor.locator(".msg.user .file", has_text="contract.pdf").count() == 1
        screenshot(ray, f"dashboard-attachments-{size}.png", full_page=True)

        # An SVG is refused, with the reason, and nothing stays as if sent.
        users = visitor.locator(".msg.user").count()
        _attach(visitor, "logo.svg", "image/svg+xml", SVG)
        visitor.locator(".notice", has_text="PNG, JPEG, GIF, WebP or PDF").wait_for(timeout=5000)
        assert visitor.locator(".msg.user").count() == users

        # Ray's image reaches the open widget at once.
        ray.locator("#id_content").fill("Here is the plan we discussed")
        ray.locator("#id_file").set_input_files(files=[
            {"name": "proposal.png", "mimeType": "image/png", "buffer": png(240, 160, (22, 163, 74))}])
        ray.get_by_role("button", name="Send to the visitor").click()
        ray.locator("#transcript .bubble.human .attachment.image img").wait_for(timeout=5000)
        visitor.locator(".msg.human", has_text="Here is the plan we discussed").wait_for(timeout=5000)
        _loaded(visitor, ".msg.human .file img")
        screenshot(visitor, f"widget-attachments-{size}.png")

        # After a reload, the widget shows every file again from its session's history.
        visitor.reload()
        visitor.wait_for_function("() => window.ServiceWidget && ServiceWidget.sessionId")
        visitor.locator("button.launcher").click()
        _loaded(visitor, ".msg.human .file img")
        assert visitor.locator(".msg .file img").count() == 2
        assert visitor.locator(".msg .file", has_text="contract.pdf").count() == 1
        assert violations == []
    finally:
        visitor_context.close()
        ray_context.close()
