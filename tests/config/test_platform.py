"""Platform guarantees that no single endpoint shows: scoping that cannot be forgotten, async
middleware, CORS from settings, secrets at rest."""

import importlib

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from tenants.models import Tenant
from tenants.services import tenant_set_agent


def test_a_viewset_cannot_replace_the_scoped_queryset():
    from config.api.views import V1ViewSet

    with pytest.raises(ImproperlyConfigured, match="scoped_queryset"):
        class Leaky(V1ViewSet):  # noqa: F841
            def get_queryset(self):
                return Tenant.objects.all()


def test_every_middleware_is_async_capable():
    # A synchronous middleware would put a thread hop in front of every streamed response.
    for dotted in settings.MIDDLEWARE:
        module, name = dotted.rsplit(".", 1)
        cls = getattr(importlib.import_module(module), name)
        assert getattr(cls, "async_capable", False), dotted


@override_settings(CORS_ALLOWED_ORIGINS=["https://shop.example.com"])
def test_cors_allows_the_configured_origins_only(api, db):
    preflight = {"Access-Control-Request-Method": "GET"}
    r = api.request("OPTIONS", "/api/health",
                    headers={"Origin": "https://shop.example.com", **preflight})
    assert r.headers["access-control-allow-origin"] == "https://shop.example.com"
    r = api.request("OPTIONS", "/api/health", headers={"Origin": "https://evil.example", **preflight})
    assert "access-control-allow-origin" not in r.headers


@pytest.mark.django_db
def test_the_provider_key_is_encrypted_at_rest_and_readable_by_the_service(kit):
    tenant_set_agent(tenant=kit.tenant, provider="openai", model="gpt-4o-mini",
                     api_key="sk-provider-secret", base_url="http://127.0.0.1:9999/v1")
    stored = Tenant.objects.get(pk=kit.tenant.pk)
    assert "sk-provider-secret" not in stored.agent_api_key_encrypted
    assert stored.agent_api_key == "sk-provider-secret"
    assert stored.has_agent_api_key
    tenant_set_agent(tenant=stored, api_key="")
    assert not Tenant.objects.get(pk=kit.tenant.pk).has_agent_api_key


@pytest.mark.django_db
def test_a_changed_encryption_key_yields_no_secret_rather_than_garbage(kit, settings):
    tenant_set_agent(tenant=kit.tenant, api_key="sk-provider-secret")
    settings.FIELD_ENCRYPTION_KEY = "another key"
    assert Tenant.objects.get(pk=kit.tenant.pk).agent_api_key == ""
