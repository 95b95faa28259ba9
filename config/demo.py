"""The quickstart's demo tenant: created on the first ``make run``, reused afterwards, with the
local origins of the server allowed to embed its widget.

Secrets are stored only as hashes, so the first run also writes them to ``var/demo-tenant.json``
(mode 0600, never committed) to print them again on later runs. That file is also how the
service knows which tenant is the demo's (the ``/demo/`` page).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from apikeys.services import api_key_authenticate
from config.management.commands.create_tenant import create_tenant_with_keys
from config.settings.email import EML_BACKEND, SMTP_BACKEND
from tenants.models import Tenant, User
from tenants.services import tenant_set_allowed_origins, user_create

DEMO_NAME = "Demo Company"
DEMO_REP_EMAIL = "rep@demo.example"
DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Demo:
    state: dict  # what var/demo-tenant.json holds: ids, keys, token, passwords
    created: bool
    allowed_origins: list[str]


def state_path() -> Path:
    return Path(settings.VAR_DIR) / "demo-tenant.json"


def _read_state() -> dict | None:
    try:
        state = json.loads(state_path().read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _load_valid_state() -> dict | None:
    state = _read_state()
    if state is None or not Tenant.objects.filter(pk=state.get("tenant", {}).get("id")).exists():
        return None
    keys = [raw for mode in state.get("keys", {}).values() for raw in mode.values()]
    if not keys or any(api_key_authenticate(raw) is None for raw in keys):
        return None
    return state


def demo_tenant() -> Tenant | None:
    """The tenant ``make run`` created, or None when it never ran here (or its tenant is gone)."""
    state = _read_state()
    tenant_id = state and state.get("tenant", {}).get("id")
    return Tenant.objects.filter(pk=tenant_id).first() if isinstance(tenant_id, str) else None


def _create() -> dict:
    state = create_tenant_with_keys(name=DEMO_NAME, plan="growth", agent="builtin")
    tenant = Tenant.objects.get(pk=state["tenant"]["id"])
    password = os.urandom(9).hex()
    user_create(tenant=tenant, email=DEMO_REP_EMAIL, first_name="Demo", last_name="Rep",
                password=password)
    state["rep"] = {"email": DEMO_REP_EMAIL, "password": password}
    operator_password = os.urandom(9).hex()
    operator = User.objects.filter(username="admin").first() or User(username="admin")
    operator.is_staff = operator.is_superuser = True
    operator.set_password(operator_password)
    operator.save()
    state["operator"] = {"username": "admin", "password": operator_password}
    path = state_path()
    path.write_text(json.dumps(state, indent=2))
    path.chmod(0o600)
    return state


def local_origins(base_url: str) -> list[str]:
    """The origins of pages served by the server at ``base_url`` as a browser names them: its
    own, and 127.0.0.1 and localhost on its port."""
    parts = urlsplit(base_url)
    port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    suffix = "" if port == DEFAULT_PORTS.get(parts.scheme) else f":{port}"
    hosts = [parts.hostname or "127.0.0.1", "127.0.0.1", "localhost"]
    return list(dict.fromkeys(f"{parts.scheme}://{f'[{host}]' if ':' in host else host}{suffix}"
                              for host in hosts if host not in ("0.0.0.0", "::")))


def demo_tenant_ensure(*, base_url: str) -> Demo:
    """Creates the demo tenant, or reuses the one of ``var/demo-tenant.json``, and allows the
    server's local origins to embed its widget. Origins a person added are kept."""
    state = _load_valid_state()
    created = state is None
    if created:
        state = _create()
    tenant = Tenant.objects.get(pk=state["tenant"]["id"])
    missing = [o for o in local_origins(base_url) if o not in tenant.allowed_origins]
    if missing:
        tenant = tenant_set_allowed_origins(tenant=tenant,
                                            origins=[*tenant.allowed_origins, *missing])
    return Demo(state=state, created=created, allowed_origins=list(tenant.allowed_origins))


def _emails_line() -> str:
    """Where the service's emails go (docs/meetings.md, "Email"): on the embedded default, the
    .eml files a newcomer opens with any mail client."""
    if not settings.EMAIL_ENABLED:
        return "Emails:        off (EMAIL_URL=off://)"
    if settings.EMAIL_BACKEND == EML_BACKEND:
        return f"Emails:        written to {settings.EMAIL_FILE_PATH}/ as .eml files (set EMAIL_URL to send)"
    if settings.EMAIL_BACKEND == SMTP_BACKEND:
        return f"Emails:        sent over SMTP to {settings.EMAIL_HOST}:{settings.EMAIL_PORT}"
    return f"Emails:        sent by {settings.EMAIL_BACKEND}"


def demo_lines(demo: Demo, *, base_url: str) -> list[str]:
    """The block ``make run`` prints: who the demo tenant is, its secrets, and where to go."""
    state, b = demo.state, base_url.rstrip("/")
    t = state["tenant"]
    lines = [
        "Created the demo tenant." if demo.created else "Reusing the demo tenant.",
        f"Tenant:        {t['name']} ({t['id']}), plan {t['plan']}, builtin agent",
        f"Widget id:     {t['publicId']}",
        f"Admin token:   {state['adminToken']}",
        f"Sales rep:     {state['rep']['email']} / {state['rep']['password']}",
        f"Admin login:   {state['operator']['username']} / {state['operator']['password']}",
        "API keys:",
    ]
    for mode, keys in state["keys"].items():
        for scope, raw in keys.items():
            lines.append(f"  {mode:<4} {scope:<5}  {raw}")
    lines += [
        "URLs:",
        f"  Demo page:     {b}/demo/   (the widget on a page, embedded as on a customer's site)",
        f"  Dashboard:     {b}/dashboard/   (sign in with the admin token, or as the sales rep)",
        f"  Home:          {b}/",
        f"  v1 API docs:   {b}/api/v1/docs",
        f"  v1 schema:     {b}/api/v1/schema   legacy schema: {b}/api/schema",
        f"  Health:        {b}/api/health",
        f"  Admin:         {b}/admin/",
        f"Widget allowed on: {', '.join(demo.allowed_origins)} "
        "(add your site's origin in the dashboard: Settings → Allowed origins)",
        f"Try: curl -H 'Authorization: Bearer {state['keys']['live']['read']}' {b}/api/v1/users",
        _emails_line(),
    ]
    return lines
