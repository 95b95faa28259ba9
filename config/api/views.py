"""Base views of the two surfaces. Every API view derives from one of these.

They fix, in one place, what no endpoint may forget: who the caller is (API key or legacy
cookie), the scope check, the HTTPS rule of v1, the error envelope of the surface, rate limits
(``config/api/limits.py``: every request counted, every response with its ``X-RateLimit-*``
headers), ``Idempotency-Key`` on v1 POSTs (``config/api/idempotency.py``), and tenant and
live/test scoping of every queryset (subclasses may narrow ``scoped_queryset`` but cannot
replace ``get_queryset``, after PostHog's ``TeamAndOrgViewSetMixin``).

Rate-limit contract for endpoints: set ``rate_limit_bucket`` (see ``config/ratelimit``), e.g.
``rate_limit_bucket = {"create": "lead_create", "search": "lead_search"}``; nothing else.
"""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model, QuerySet
from django.http import HttpResponse
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView
from rest_framework import viewsets
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from apikeys.authentication import AdminCookieAuthentication, BearerKeyAuthentication, Caller
from core import errors as domain
from core import ids

from .errors import legacy_exception_handler, v1_exception_handler
from .idempotency import IdempotencyMixin
from .limits import RateLimitMixin
from .permissions import ScopePermission
from .renderers import SCHEMA_RENDERERS


class HttpsRequired(domain.Forbidden):
    default_message = "HTTPS is required: the v1 API does not accept plain HTTP requests."


class NoStoreMixin:
    """Answers carry tenant data (leads, conversations, keys): no browser or proxy may keep a
    copy (``Cache-Control: no-store``), unless the view sets its own policy (the widget's
    public configuration, a stream)."""

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response.setdefault("Cache-Control", "no-store")
        return response


class V1Mixin(NoStoreMixin, IdempotencyMixin, RateLimitMixin):
    surface = "v1"
    authentication_classes = [BearerKeyAuthentication]
    permission_classes = [ScopePermission]

    def get_exception_handler(self):
        return v1_exception_handler

    def check_transport(self, request) -> None:
        if settings.V1_REQUIRE_HTTPS and not request.is_secure():
            raise HttpsRequired()


class LegacyMixin(NoStoreMixin, RateLimitMixin):
    surface = "legacy"
    authentication_classes = [BearerKeyAuthentication, AdminCookieAuthentication]
    permission_classes = [ScopePermission]

    def get_exception_handler(self):
        return legacy_exception_handler


class PublicMixin:
    """No authentication: ``/api/chat``, ``/api/widget``, ``/api/health``.

    Rate limits apply per client address and, when ``rate_limit_tenant(request)`` names the
    tenant, per tenant: set ``rate_limit_bucket`` to ``public_chat``, ``public_widget`` or
    ``public_health``. Without a public bucket, a view is limited like any request without
    credentials.
    """

    authentication_classes: list = []
    permission_classes = [AllowAny]


class TenantScopedMixin:
    """Querysets filtered by the caller's tenant and, for live/test data, its mode.

    Subclasses set ``queryset`` (unscoped) and may narrow it in ``scoped_queryset``. A record
    of another tenant or mode is simply absent: 404, never 403.
    """

    queryset: QuerySet | None = None
    # The services' field names -> this surface's, for error details (``config.api.errors``).
    field_names: dict[str, str] = {}
    livemode_scoped = True
    id_prefix: str | None = None  # v1 ids; None means the legacy UUID form
    lookup_url_kwarg = "id"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "get_queryset" in cls.__dict__:
            raise ImproperlyConfigured(
                f"{cls.__name__} overrides get_queryset; narrow scoped_queryset instead so that "
                "tenant and mode scoping cannot be lost."
            )

    @property
    def caller(self) -> Caller:
        return self.request.user

    def get_queryset(self) -> QuerySet:
        if self.queryset is None:
            raise ImproperlyConfigured(f"{type(self).__name__} needs a queryset")
        caller = self.caller
        qs = self.queryset.all().filter(tenant=caller.tenant)
        if self.livemode_scoped:
            qs = qs.filter(livemode=caller.livemode)
        return self.scoped_queryset(qs)

    def scoped_queryset(self, queryset: QuerySet) -> QuerySet:
        return queryset

    def lookup_pk(self) -> UUID:
        raw = self.kwargs[self.lookup_url_kwarg]
        if self.id_prefix:
            return ids.decode_or_404(self.id_prefix, raw)
        return ids.parse_uuid_or_404(raw)

    def get_object(self) -> Model:
        obj = self.get_queryset().filter(pk=self.lookup_pk()).first()
        if obj is None:
            raise domain.NotFound()
        self.check_object_permissions(self.request, obj)
        return obj

    def owner(self) -> dict[str, Any]:
        """Tenant and mode for a service call, from the caller and nowhere else."""
        return {"tenant": self.caller.tenant, "livemode": self.caller.livemode}

    def requested_by(self) -> str:
        """Who asked, as an audit line names them: the API key's visible part, or the legacy
        admin session."""
        key = self.caller.api_key
        return f"API key {key.prefix}…{key.last4}" if key else "Legacy admin session"


class V1APIView(V1Mixin, APIView):
    pass


class V1ViewSet(V1Mixin, TenantScopedMixin, viewsets.GenericViewSet):
    pass


class LegacyAPIView(LegacyMixin, APIView):
    pass


class LegacyViewSet(LegacyMixin, TenantScopedMixin, viewsets.GenericViewSet):
    pass


class PublicLegacyAPIView(PublicMixin, LegacyMixin, APIView):
    pass


class V1NotFoundView(PublicMixin, V1APIView):
    """Catch-all at the end of the v1 routes: an unknown path is a v1 404."""

    def _missing(self, request, *args, **kwargs):
        raise domain.NotFound("No such endpoint: " + request.path)

    get = post = put = patch = delete = head = options = _missing


class LegacyNotFoundView(PublicMixin, LegacyAPIView):
    def _missing(self, request, *args, **kwargs):
        raise domain.NotFound("No such endpoint: " + request.path)

    get = post = put = patch = delete = head = options = _missing


class SwaggerView(SpectacularSwaggerView):
    """The v1 API's Swagger UI page. Its only renderer is an HTML template, which has nothing to
    render for ``OPTIONS``: that answers with the ``Allow`` header and no body."""

    def options(self, request, *args, **kwargs):
        response = HttpResponse(status=200)
        response["Allow"] = ", ".join(self.allowed_methods)
        return response


class SchemaView(SpectacularJSONAPIView):
    """A surface's OpenAPI schema, generated once per process, under a lock. drf-spectacular is
    not thread-safe there: it patches its global settings with the view's ``custom_settings``
    (the title) while it generates, and loads its extensions lazily, so two first requests at
    once answered 500 (an ``AttributeError`` in its extension loading, found by the fuzzer)."""

    # JSON first (the default), escaped so that it is also valid YAML; YAML on request.
    renderer_classes = SCHEMA_RENDERERS
    _lock = threading.Lock()
    _generated: dict[tuple, tuple[Any, dict]] = {}

    def get(self, request, *args, **kwargs):
        key = (id(self.patterns), repr(sorted((self.custom_settings or {}).items(), key=str)))
        with self._lock:
            if key not in self._generated:
                response = super().get(request, *args, **kwargs)
                self._generated[key] = (response.data, dict(response.headers))
        data, headers = self._generated[key]
        # The file name's suffix is the format of this answer, not of the one generated first.
        disposition = headers.get("Content-Disposition", "")
        stem, dot, _ = disposition.rpartition(".")
        if dot and disposition.endswith('"'):
            headers = {**headers, "Content-Disposition":
                       f'{stem}.{request.accepted_renderer.format}"'}
        return Response(data, headers=headers)
