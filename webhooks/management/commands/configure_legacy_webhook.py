"""Configures a tenant's legacy webhooks (what the dashboard's Settings, Webhooks page does):
create, change, enable/disable, delete, list. The secret is printed once, at creation."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from apikeys.presenters import as_json
from config.errors import ServiceError
from tenants.models import Tenant
from tenants.selectors import tenant_by_reference
from webhooks import selectors, services
from webhooks.envelopes import LEGACY_EVENT_TYPES
from webhooks.models import LegacyWebhook
from webhooks.presenters import legacy_webhook_summary


class Command(BaseCommand):
    help = ("Creates, changes, lists or deletes a tenant's legacy webhooks (events: "
            + ", ".join(LEGACY_EVENT_TYPES) + ").")

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="Tenant id (UUID) or public id.")
        parser.add_argument("--id", dest="webhook_id", help="The legacy webhook to change.")
        parser.add_argument("--url", help="Receiver URL (https, public host).")
        parser.add_argument("--events", help="Comma-separated; default on creation: all three.")
        parser.add_argument("--secret", help="Signing secret; generated when omitted on creation.")
        parser.add_argument("--mode", choices=["live", "test"], default="live",
                            help="Which data's events it receives (default live).")
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--enable", action="store_true")
        state.add_argument("--disable", action="store_true")
        state.add_argument("--delete", action="store_true")
        state.add_argument("--list", dest="show", action="store_true",
                           help="List the tenant's legacy webhooks.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, tenant, webhook_id, url, events, secret, mode, enable, disable,
               delete, show: bool, json: bool, **options):
        owner = _tenant(tenant)
        livemode = mode == "live"
        if show:
            rows = [legacy_webhook_summary(w)
                    for w in selectors.legacy_webhook_list(tenant=owner, livemode=livemode)]
            self.stdout.write(as_json(rows) if json else "\n".join(
                f"{r['id']}  {'active' if r['active'] else 'inactive'}  {r['url']}  "
                f"{','.join(r['events'])}" for r in rows) or "No legacy webhooks.")
            return
        event_list = None if events is None else [e.strip() for e in events.split(",") if e.strip()]
        try:
            if webhook_id is None:
                if delete or not url:
                    raise CommandError("Creating a legacy webhook needs --url (and no --delete).")
                webhook, shown = services.legacy_webhook_create(
                    tenant=owner, livemode=livemode, url=url,
                    events=event_list or list(LEGACY_EVENT_TYPES), secret=secret)
                if disable:
                    webhook = services.legacy_webhook_update(webhook=webhook, active=False)
                summary = legacy_webhook_summary(webhook, secret=shown)
            else:
                webhook = _webhook(owner, webhook_id)
                if delete:
                    services.legacy_webhook_delete(webhook=webhook)
                    self.stdout.write(as_json({"id": str(webhook.pk), "deleted": True}) if json
                                      else f"Deleted legacy webhook {webhook.pk}.")
                    return
                changes = {k: v for k, v in {"url": url, "events": event_list, "secret": secret}.items()
                           if v is not None}
                if enable or disable:
                    changes["active"] = bool(enable)
                webhook = services.legacy_webhook_update(webhook=webhook, **changes)
                summary = legacy_webhook_summary(webhook)
        except ServiceError as exc:
            details = "; ".join(f"{d.field}: {d.message}" for d in exc.details)
            raise CommandError(f"{exc.message} {details}".strip()) from exc
        if json:
            self.stdout.write(as_json(summary))
            return
        lines = [f"Legacy webhook {summary['id']} -> {summary['url']} "
                 f"({', '.join(summary['events'])}; {'active' if summary['active'] else 'inactive'})"]
        if "secret" in summary:
            lines.append(f"Signing secret (shown only now): {summary['secret']}")
        self.stdout.write("\n".join(lines))


def _tenant(ref: str) -> Tenant:
    found = tenant_by_reference(ref)
    if found is None:
        raise CommandError(f"No tenant with id or public id {ref!r}.")
    return found


def _webhook(tenant: Tenant, ref: str) -> LegacyWebhook:
    try:
        found = LegacyWebhook.objects.filter(pk=ref, tenant=tenant).first()
    except ValidationError:
        found = None
    if found is None:
        raise CommandError(f"No legacy webhook {ref!r} for this tenant.")
    return found
