"""Headless Chromium for the browser tests (Debian's ``chromium``, driven by Playwright), and a
host page served from another origin that embeds the widget as a customer's site would."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

# make test checks for it first (and installs it as root); CHROMIUM overrides the path.
CHROMIUM = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOT_DIR = Path(__file__).resolve().parent.parent / "docs" / "screenshots"

HOST_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Acme Analytics</title>
<style>
  /* Hostile styles: the widget must look the same whatever the site's CSS says. */
  * {{ font-family: Georgia, serif !important; }}
  button {{ background: hotpink; border-radius: 0; padding: 30px; }}
  div {{ color: green; }}
  body {{ margin: 0; background: #f8fafc; color: #0f172a; }}
  .hero {{ padding: 64px 48px; }} h1 {{ font-size: 40px; margin: 0 0 12px; }}
</style></head>
<body>
<div class="hero"><h1>Acme Analytics</h1><p>Dashboards your whole team understands.</p>
<button id="host-button">A button of the site</button></div>
<script>
  window.__events = [];
  ["service:lead.qualified", "service:meeting.booked"].forEach(function (name) {{
    window.addEventListener(name, function (e) {{ window.__events.push({{type: name, detail: e.detail}}); }});
  }});
</script>
<script src="{base}/widget.js" data-tenant="{tenant}"{attrs} async></script>
</body></html>
"""


def screenshot(page, name: str, **kwargs) -> None:
    """Writes ``docs/screenshots/<name>`` only when ``SCREENSHOTS=1`` (``make screenshots``):
    an ordinary test run leaves the checkout clean. ``kwargs`` go to Playwright's
    ``screenshot`` (``full_page=True``)."""
    wanted = os.environ.get("SCREENSHOTS", "")
    if wanted not in ("", "0", "1"):
        raise ValueError(f"SCREENSHOTS must be 1 or 0, not {wanted!r}")
    if wanted == "1":
        page.screenshot(path=str(SCREENSHOT_DIR / name), **kwargs)


# Reports each Content-Security-Policy violation of every page of a context to the test
# (``watch_csp``): added before any script of the page runs, and fed by the browser's own
# ``securitypolicyviolation`` events (those of the widget's shadow root included: they bubble out).
CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolation([location.pathname, e.effectiveDirective, e.blockedURI || "inline",
                         (e.sourceFile || "") + ":" + e.lineNumber, e.sample || ""].join(" "));
}, true);
"""


def watch_csp(context) -> list[str]:
    """The Content-Security-Policy violations of every page of ``context``, as they happen: the
    ``securitypolicyviolation`` events (through an init script) and the console's reports (Chromium
    logs "Refused to … because it violates the following Content Security Policy directive")."""
    found: list[str] = []

    def report(text: str) -> None:
        found.append(text)

    def console(message) -> None:
        if "Content Security Policy" in message.text:
            found.append(message.text)

    context.expose_function("__cspViolation", report)
    context.add_init_script(CSP_LISTENER)
    context.on("console", console)
    return found


def chromium_or_skip() -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"the browser tests need Chromium at {CHROMIUM}: apt-get install chromium "
                    "(make test does it as root), or set CHROMIUM=/path/to/chromium")


@contextlib.contextmanager
def browser() -> Iterator:
    from playwright.sync_api import sync_playwright

    chromium_or_skip()
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


class HostSite:
    """A customer's site on its own origin (another port): serves one page embedding the
    widget of ``tenant`` from ``base``; the query's ``data-*`` parameters become attributes of
    its script tag (``/?data-language=de``)."""

    def __init__(self, base: str, tenant: str):
        self.base, self.tenant = base, tenant
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                # ?data-language=de&data-launcher-text=… : the script tag's options.
                query = parse_qsl(urlsplit(self.path).query, keep_blank_values=True)
                attrs = "".join(f' {escape(k)}="{escape(v)}"' for k, v in query
                                if k.startswith("data-") and k != "data-tenant")
                body = HOST_PAGE.format(base=site.base, tenant=site.tenant, attrs=attrs).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# The embedded default, as make run serves it, for a test's own daphne (tests/live.py).
EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "ALLOWED_HOSTS": None, "V1_REQUIRE_HTTPS": "0", "EMAIL_URL": None}


@contextlib.contextmanager
def customer_site(var_dir: Path, setup: str = "", env: dict | None = None,
                  **values: str) -> Iterator[dict]:
    """A fresh embedded service (migrated, one tenant "Acme") under daphne, a customer's site
    embedding its widget, and Chromium. ``setup``: Python run by ``manage.py shell`` once the
    site's origin is known, formatted with ``tenant`` (the tenant's id), ``origin`` and
    ``values``. Yields ``{base, site, browser, env, created, tenant, output}``: ``created`` is
    ``create_tenant --json``'s answer (the tenant and its keys), ``output`` what ``setup``
    printed."""
    import json

    from tests.live import daphne, manage

    env = {**EMBEDDED, "VAR_DIR": str(var_dir), **(env or {})}
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    tenant = created["tenant"]
    with daphne(env) as base:
        site = HostSite(base, tenant["publicId"])
        try:
            output = setup and manage(
                "shell", "--no-imports", "-c",
                setup.format(tenant=tenant["id"], origin=site.origin, **values), env=env)
            with browser() as chromium:
                yield {"base": base, "site": site, "browser": chromium, "env": env,
                       "created": created, "tenant": tenant, "output": output}
        finally:
            site.close()


def sign_in(page, base: str, email: str, password: str) -> None:
    """Signs in on the dashboard's page, as a person does, and waits for its home."""
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
