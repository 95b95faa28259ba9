"""Sets a tenant's agent: provider, model, provider key and an OpenAI-compatible base URL, whose
embeddings knowledge retrieval compares, the limits of its replies, and the facts it may state
(docs/agent.md)."""

from django.core.management.base import BaseCommand, CommandError

from core.cli import as_json
from core.errors import ServiceError
from tenants.models import AgentProvider, EmbeddingsSource, Tenant
from tenants.selectors import tenant_by_reference
from tenants.services import tenant_set_agent, tenant_set_agent_limits, tenant_set_facts

LIMITS = ("max_reply_tokens", "max_reply_chars", "turn_seconds")
FACTS = ("product", "pricing_url", "hours")


class Command(BaseCommand):
    help = "Configures a tenant's language-model provider. The key is stored encrypted, never shown."

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="Tenant id (UUID) or public id.")
        parser.add_argument("--provider", choices=AgentProvider.values)
        parser.add_argument("--model")
        parser.add_argument("--api-key", help="Provider key; an empty string clears it.")
        parser.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
        parser.add_argument("--booking-url", help="External booking link offered instead of slots.")
        parser.add_argument("--embeddings", choices=EmbeddingsSource.values,
                            help="Knowledge retrieval by the local model's embeddings (default) or "
                                 "by the openai provider's /v1/embeddings (the local model's stay, "
                                 "as the fallback).")
        parser.add_argument("--embedding-model",
                            help="The provider's embedding model, e.g. text-embedding-3-small.")
        parser.add_argument("--max-reply-tokens", type=int, help="Tokens a reply may take (32-4000).")
        parser.add_argument("--max-reply-chars", type=int,
                            help="Characters a reply may have; it ends on a whole sentence (200-8000).")
        parser.add_argument("--turn-seconds", type=int, help="The whole turn's deadline (3-120).")
        parser.add_argument("--product", help="What the product is: a fact the agent may state.")
        parser.add_argument("--pricing-url", help="Where the prices are: the agent links it.")
        parser.add_argument("--hours", help="Business hours the agent may state.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, tenant, json: bool, **options):
        found = tenant_by_reference(tenant)
        if found is None:
            raise CommandError(f"No tenant with id or public id {tenant!r}.")
        try:
            tenant_set_agent(tenant=found, provider=options["provider"], model=options["model"],
                             api_key=options["api_key"], base_url=options["base_url"],
                             booking_url=options["booking_url"], embeddings=options["embeddings"],
                             embedding_model=options["embedding_model"])
            self._limits(found, options)
            self._facts(found, options)
        except ServiceError as exc:
            raise CommandError(exc.message + "".join(f" {d.field}: {d.message}"
                                                     for d in exc.details)) from exc
        self.stdout.write(as_json(_summary(found)) if json else
                          f"{found.name}: {found.agent_provider} ({found.agent_model}), "
                          f"key {'set' if found.has_agent_api_key else 'not set'}, "
                          f"{_embeddings(found)}, replies of at most "
                          f"{found.agent_max_reply_chars} characters")

    @staticmethod
    def _limits(tenant: Tenant, options: dict) -> None:
        if all(options[name] is None for name in LIMITS):
            return
        tenant_set_agent_limits(
            tenant=tenant,
            max_reply_tokens=_or(options["max_reply_tokens"], tenant.agent_max_reply_tokens),
            max_reply_chars=_or(options["max_reply_chars"], tenant.agent_max_reply_chars),
            turn_seconds=_or(options["turn_seconds"], tenant.agent_turn_seconds))

    @staticmethod
    def _facts(tenant: Tenant, options: dict) -> None:
        if all(options[name] is None for name in FACTS):
            return
        tenant_set_facts(tenant=tenant,
                         product_summary=_or(options["product"], tenant.product_summary),
                         pricing_url=_or(options["pricing_url"], tenant.pricing_url),
                         business_hours=_or(options["hours"], tenant.business_hours))


def _embeddings(tenant: Tenant) -> str:
    if tenant.agent_embeddings == EmbeddingsSource.PROVIDER:
        used = "" if tenant.uses_provider_embeddings else " (unused: needs the openai provider and a key)"
        return f"embeddings by the provider ({tenant.agent_embedding_model}){used}"
    return "embeddings by the local model"


def _or(given, current):
    return current if given is None else given


def _summary(tenant: Tenant) -> dict:
    return {"tenant": str(tenant.pk), "provider": tenant.agent_provider,
            "model": tenant.agent_model, "baseUrl": tenant.agent_base_url or None,
            "hasApiKey": tenant.has_agent_api_key, "bookingUrl": tenant.booking_url or None,
            "embeddings": tenant.agent_embeddings,
            "embeddingModel": tenant.agent_embedding_model or None,
            "providerEmbeddings": tenant.uses_provider_embeddings,
            "maxReplyTokens": tenant.agent_max_reply_tokens,
            "maxReplyChars": tenant.agent_max_reply_chars,
            "turnSeconds": tenant.agent_turn_seconds,
            "product": tenant.product_summary or None, "pricingUrl": tenant.pricing_url or None,
            "hours": tenant.business_hours or None}
