from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apikeys.models import Scope
from apikeys.selectors import WITH_THE_TENANT
from apikeys.services import api_key_create
from core.cli import as_json
from core.errors import ServiceError
from tenants.models import AgentProvider, Plan
from tenants.services import tenant_create


def create_tenant_with_keys(*, name: str, plan: str, agent: str) -> dict:
    """A tenant, its admin token and one key per mode and scope, as one JSON-ready dict."""
    with transaction.atomic():
        tenant, admin_token = tenant_create(name=name, plan=plan, agent_provider=agent)
        keys: dict[str, dict[str, str]] = {"live": {}, "test": {}}
        for mode, livemode in (("live", True), ("test", False)):
            for scope in Scope.values:
                _, raw = api_key_create(tenant=tenant, name=f"Default {mode} {scope} key",
                                        scope=scope, livemode=livemode,
                                        created_by=WITH_THE_TENANT)
                keys[mode][scope] = raw
    return {
        "tenant": {"id": str(tenant.pk), "publicId": tenant.public_id, "name": tenant.name,
                   "plan": tenant.plan},
        "adminToken": admin_token,
        "keys": keys,
    }


class Command(BaseCommand):
    help = "Creates a tenant with its admin token and a key of each scope in each mode."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--plan", choices=Plan.values, default=Plan.STARTER)
        parser.add_argument("--agent", choices=AgentProvider.values, default=AgentProvider.BUILTIN)
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args, name, plan, agent, json: bool, **options):
        try:
            result = create_tenant_with_keys(name=name, plan=plan, agent=agent)
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        if json:
            self.stdout.write(as_json(result))
            return
        tenant = result["tenant"]
        self.stdout.write(f"Tenant {tenant['name']} ({tenant['id']}), plan {tenant['plan']}")
        self.stdout.write(f"  widget id (data-tenant): {tenant['publicId']}")
        self.stdout.write(f"  admin token:             {result['adminToken']}")
        for mode, keys in result["keys"].items():
            for scope, raw in keys.items():
                self.stdout.write(f"  {mode} {scope:<5} key:          {raw}")
        self.stdout.write("Keys and token are shown only now; store them safely.")
