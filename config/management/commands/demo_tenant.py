"""The quickstart's demo tenant: created on the first ``make run``, reused afterwards.

Secrets are stored only as hashes, so the first run also writes them to ``var/demo-tenant.json``
(mode 0600, never committed) to print them again on later runs.
"""

import json
import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from apikeys.services import api_key_authenticate
from config.settings.email import EML_BACKEND, SMTP_BACKEND
from tenants.models import Tenant, User
from tenants.services import user_create

from .create_tenant import create_tenant_with_keys

DEMO_NAME = "Demo Company"
DEMO_REP_EMAIL = "rep@demo.example"


def _state_path() -> Path:
    return Path(settings.VAR_DIR) / "demo-tenant.json"


def _load_valid_state() -> dict | None:
    path = _state_path()
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except ValueError:
        return None
    if not Tenant.objects.filter(pk=state.get("tenant", {}).get("id")).exists():
        return None
    keys = [raw for mode in state.get("keys", {}).values() for raw in mode.values()]
    if not keys or any(api_key_authenticate(raw) is None for raw in keys):
        return None
    return state


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


class Command(BaseCommand):
    help = "Creates or reuses the demo tenant (builtin agent) and prints its ids, keys and URLs."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, base_url: str, **options):
        state = _load_valid_state()
        if state is None:
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
            path = _state_path()
            path.write_text(json.dumps(state, indent=2))
            path.chmod(0o600)
            self.stdout.write(self.style.SUCCESS("Created the demo tenant."))
        else:
            self.stdout.write("Reusing the demo tenant.")
        t = state["tenant"]
        b = base_url.rstrip("/")
        lines = [
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
            f"  Home:          {b}/",
            f"  v1 API docs:   {b}/api/v1/docs",
            f"  v1 schema:     {b}/api/v1/schema   legacy schema: {b}/api/schema",
            f"  Health:        {b}/api/health",
            f"  Admin:         {b}/admin/",
            f"Try: curl -H 'Authorization: Bearer {state['keys']['live']['read']}' {b}/api/v1/users",
            _emails_line(),
        ]
        self.stdout.write("\n".join(lines))
