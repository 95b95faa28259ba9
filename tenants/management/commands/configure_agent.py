"""Sets a tenant's agent: provider, model, provider key and an OpenAI-compatible base URL."""

from django.core.management.base import BaseCommand, CommandError

from apikeys.presenters import as_json
from config.errors import ServiceError
from tenants.models import AgentProvider
from tenants.selectors import tenant_by_reference
from tenants.services import tenant_set_agent


class Command(BaseCommand):
    help = "Configures a tenant's language-model provider. The key is stored encrypted, never shown."

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="Tenant id (UUID) or public id.")
        parser.add_argument("--provider", choices=AgentProvider.values)
        parser.add_argument("--model")
        parser.add_argument("--api-key", help="Provider key; an empty string clears it.")
        parser.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
        parser.add_argument("--booking-url", help="External booking link offered instead of slots.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, tenant, provider, model, api_key, base_url, booking_url, json: bool,
               **options):
        found = tenant_by_reference(tenant)
        if found is None:
            raise CommandError(f"No tenant with id or public id {tenant!r}.")
        try:
            tenant_set_agent(tenant=found, provider=provider, model=model, api_key=api_key,
                             base_url=base_url, booking_url=booking_url)
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        summary = {"tenant": str(found.pk), "provider": found.agent_provider,
                   "model": found.agent_model, "baseUrl": found.agent_base_url or None,
                   "hasApiKey": found.has_agent_api_key, "bookingUrl": found.booking_url or None}
        self.stdout.write(as_json(summary) if json else
                          f"{found.name}: {found.agent_provider} ({found.agent_model}), "
                          f"key {'set' if found.has_agent_api_key else 'not set'}")
