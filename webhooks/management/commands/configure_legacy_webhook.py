"""Configures a tenant's legacy webhooks (what the dashboard's Settings, Webhooks page does):
create, change, enable/disable, delete, list. The secret is printed once, at creation."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from core.cli import as_json
from core.errors import ServiceError
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
            self.stdout.write(_listing(owner, livemode, json=json))
            return
        event_list = _event_list(events)
        try:
            if webhook_id is None:
                summary = _create(owner, livemode, url=url, events=event_list, secret=secret,
                                  disable=disable, delete=delete)
            elif delete:
                self.stdout.write(_delete(_webhook(owner, webhook_id), json=json))
                return
            else:
                summary = _change(_webhook(owner, webhook_id), url=url, events=event_list,
                                  secret=secret, enable=enable, disable=disable)
        except ServiceError as exc:
            details = "; ".join(f"{d.field}: {d.message}" for d in exc.details)
            raise CommandError(f"{exc.message} {details}".strip()) from exc
        self.stdout.write(as_json(summary) if json else _summary_text(summary))


def _listing(owner: Tenant, livemode: bool, *, json: bool) -> str:
    rows = [legacy_webhook_summary(w)
            for w in selectors.legacy_webhook_list(tenant=owner, livemode=livemode)]
    return as_json(rows) if json else "\n".join(
        f"{r['id']}  {'active' if r['active'] else 'inactive'}  {r['url']}  "
        f"{','.join(r['events'])}" for r in rows) or "No legacy webhooks."


def _event_list(events: str | None) -> list[str] | None:
    """--events as a list; None when it was not given (a change then keeps the events)."""
    return None if events is None else [e.strip() for e in events.split(",") if e.strip()]


def _create(owner: Tenant, livemode: bool, *, url: str | None, events: list[str] | None,
            secret: str | None, disable: bool, delete: bool) -> dict:
    """Creates the webhook (all event types unless given); its summary shows the secret."""
    if delete or not url:
        raise CommandError("Creating a legacy webhook needs --url (and no --delete).")
    webhook, shown = services.legacy_webhook_create(
        tenant=owner, livemode=livemode, url=url, events=events or list(LEGACY_EVENT_TYPES),
        secret=secret)
    if disable:
        webhook = services.legacy_webhook_update(webhook=webhook, active=False)
    return legacy_webhook_summary(webhook, secret=shown)


def _change(webhook: LegacyWebhook, *, url: str | None, events: list[str] | None,
            secret: str | None, enable: bool, disable: bool) -> dict:
    """Changes what was given, and nothing else."""
    changes = {k: v for k, v in {"url": url, "events": events, "secret": secret}.items()
               if v is not None}
    if enable or disable:
        changes["active"] = bool(enable)
    webhook = services.legacy_webhook_update(webhook=webhook, **changes)
    return legacy_webhook_summary(webhook)


def _delete(webhook: LegacyWebhook, *, json: bool) -> str:
    services.legacy_webhook_delete(webhook=webhook)
    return (as_json({"id": str(webhook.pk), "deleted": True}) if json
            else f"Deleted legacy webhook {webhook.pk}.")


def _summary_text(summary: dict) -> str:
    lines = [f"Legacy webhook {summary['id']} -> {summary['url']} "
             f"({', '.join(summary['events'])}; {'active' if summary['active'] else 'inactive'})"]
    if "secret" in summary:
        lines.append(f"Signing secret (shown only now): {summary['secret']}")
    return "\n".join(lines)


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
