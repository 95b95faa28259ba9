"""Language-model providers. ``provider_for(tenant)`` picks the tenant's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import ProviderNotConfigured

from .base import Provider
from .builtin import BuiltinProvider

if TYPE_CHECKING:
    from tenants.models import Tenant


DEFAULT_MODEL = "gpt-4o-mini"  # a tenant on openai that names no model


def provider_for(tenant: Tenant) -> Provider:
    if tenant.agent_provider == "openai":
        from .openai import OpenAIProvider

        key = tenant.agent_api_key
        if not key:
            raise ProviderNotConfigured(
                "The tenant's language-model provider (openai) is not configured: it has no API key."
            )
        return OpenAIProvider(api_key=key, model=tenant.agent_model or DEFAULT_MODEL,
                              base_url=tenant.agent_base_url or None)
    return BuiltinProvider()


__all__ = ["DEFAULT_MODEL", "Provider", "provider_for"]
