"""``manage.py reset_admin_token <tenant>``: a new admin token for a tenant that lost its own,
or whose token leaked. The old token, and every cookie and dashboard session it opened, stop
working at once."""

from django.core.management.base import BaseCommand, CommandError

from core.cli import as_json
from tenants.selectors import tenant_by_reference
from tenants.services import tenant_reset_admin_token


class Command(BaseCommand):
    help = "Issues a new admin token for a tenant; it is printed once and never again."

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="Tenant id (UUID) or public id.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, tenant: str, json: bool, **options):
        found = tenant_by_reference(tenant)
        if found is None:
            raise CommandError(f"No tenant with id or public id {tenant!r}.")
        token = tenant_reset_admin_token(tenant=found)
        if json:
            self.stdout.write(as_json({"tenant": str(found.pk), "adminToken": token}))
        else:
            self.stdout.write(f"{token}\n(the new admin token of {found.name}: shown only now; "
                              "the old one no longer works)")
