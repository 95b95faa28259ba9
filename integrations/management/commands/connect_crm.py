"""Connects a tenant's CRM with a private app's token, verified at once (docs/integrations.md).

The token comes from --token, or, to keep it out of the shell's history, from --token-stdin or
the CRM_TOKEN environment variable.
"""


from django.core.management.base import BaseCommand, CommandError

from core.cli import as_json, refused, secret
from core.errors import ServiceError
from integrations.models import Provider
from integrations.services import crm_connect_token
from tenants.selectors import tenant_by_reference

TOKEN_ENV = "CRM_TOKEN"


class Command(BaseCommand):
    help = "Connects a tenant's CRM with a token. The token is stored encrypted, never shown."

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="Tenant id (UUID) or public id.")
        parser.add_argument("provider", choices=Provider.values)
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--token", help=f"Private app token (or --token-stdin, or ${TOKEN_ENV}).")
        source.add_argument("--token-stdin", action="store_true",
                            help="Read the token from the first line of standard input.")
        parser.add_argument("--base-url", help="The CRM's API base URL (a stand-in, a sandbox).")
        parser.add_argument("--test", action="store_true", help="Connect for test-mode data.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, tenant, provider, token, token_stdin, base_url, test, json, **_):
        found = tenant_by_reference(tenant)
        if found is None:
            raise CommandError(f"No tenant with id or public id {tenant!r}.")
        token = secret(token, from_stdin=token_stdin, env=TOKEN_ENV, what="token")
        try:
            connection = crm_connect_token(tenant=found, livemode=not test, provider=provider,
                                           token=token, base_url=base_url)
        except ServiceError as exc:
            raise CommandError(refused(exc)) from exc
        summary = {"provider": connection.provider, "status": connection.status,
                   "livemode": connection.livemode, "base_url": connection.base_url,
                   "scopes": connection.scopes}
        self.stdout.write(as_json(summary) if json else
                          f"Connected {connection.get_provider_display()} for {found.name} "
                          f"({'live' if connection.livemode else 'test'} data).")
