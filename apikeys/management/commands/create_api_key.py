from django.core.management.base import BaseCommand, CommandError

from apikeys.models import Scope
from apikeys.presenters import key_summary
from apikeys.services import api_key_create
from core.cli import as_json
from core.errors import ServiceError
from tenants.models import Tenant
from tenants.selectors import tenant_by_reference


class Command(BaseCommand):
    help = "Issues an API key for a tenant; the key is printed once and never again."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="Tenant id (UUID) or public id.")
        parser.add_argument("--scope", required=True, choices=Scope.values)
        parser.add_argument("--mode", required=True, choices=["live", "test"])
        parser.add_argument("--name", required=True)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, tenant, scope, mode, name, json: bool, **options):
        owner = _tenant(tenant)
        try:
            key, raw = api_key_create(tenant=owner, name=name, scope=scope,
                                      livemode=mode == "live", created_by="create_api_key")
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        summary = key_summary(key, secret=raw)
        if json:
            self.stdout.write(as_json(summary))
        else:
            self.stdout.write(f"{summary['key']}\n(id {summary['id']}, {mode} {scope}, "
                              f"'{name}': shown only now)")


def _tenant(ref: str) -> Tenant:
    found = tenant_by_reference(ref)
    if found is None:
        raise CommandError(f"No tenant with id or public id {ref!r}.")
    return found
