"""CORS for the public widget endpoints: a tenant's pages may call ``/api/chat`` and
``/api/widget`` from the browser when their origin is in the tenant's allowed origins.

django-cors-headers does the CORS work and asks ``check_request_enabled`` about each request.
It asks synchronously, also under ASGI, where no query may run; so ``WidgetOriginsMiddleware``,
placed before it, looks the tenant's origins up first (off the event loop) and the signal
handler only reads the answer. The tenant is named by the ``tenant`` query parameter, which the
widget always sends (preflights included). Origins in ``CORS_ALLOWED_ORIGINS`` are allowed
everywhere, as the library does by itself.

``/api/widget`` also refuses, readably, a page whose origin the tenant did not allow
(``widget_origin_check``): the browser would hide a CORS refusal from the widget, which could then
only say "Failed to fetch" (docs/decisions.md, "Widget and dashboard").
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings

from core.errors import Forbidden

from .models import Tenant
from .selectors import tenant_by_public_id

PUBLIC_WIDGET_PATHS = ("/api/chat", "/api/widget")


def _origins_for(public_id: str) -> frozenset[str]:
    tenant = tenant_by_public_id(public_id)
    origins = tenant.allowed_origins if tenant else []
    return frozenset(o.rstrip("/") for o in origins if isinstance(o, str))


def _wants_lookup(request) -> str | None:
    if not request.path.startswith(PUBLIC_WIDGET_PATHS) or "Origin" not in request.headers:
        return None
    return request.GET.get("tenant") or None


class WidgetOriginsMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        public_id = _wants_lookup(request)
        request.widget_allowed_origins = _origins_for(public_id) if public_id else frozenset()
        return self.get_response(request)

    async def __acall__(self, request):
        public_id = _wants_lookup(request)
        request.widget_allowed_origins = (
            await sync_to_async(_origins_for)(public_id) if public_id else frozenset())
        return await self.get_response(request)


def allow_tenant_origins(sender, request, **kwargs) -> bool:
    origin = request.headers.get("Origin", "").rstrip("/")
    return bool(origin) and origin in getattr(request, "widget_allowed_origins", frozenset())


# Where the dashboard's Settings page lets the staff add an origin (templates/dashboard/
# settings.html: the "Allowed origins" card and its field's label).
ORIGINS_FIELD = '"Sites that may embed the widget" (dashboard, Settings → Allowed origins)'


class OriginNotAllowed(Forbidden):
    """A browser page whose origin the tenant does not allow asked for its widget."""

    def __init__(self, origin: str, tenant: Tenant):
        if origin == "null":
            message = ("A page without an origin (opened from a file, or in a sandboxed frame) "
                       f"cannot embed the widget of {tenant.public_id}: serve the page over "
                       f"http(s) and add its origin to {ORIGINS_FIELD}.")
        else:
            message = (f"Origin {origin} is not allowed to embed the widget of "
                       f"{tenant.public_id}: add it to {ORIGINS_FIELD}.")
        super().__init__(message)


def widget_origin_check(request, tenant: Tenant) -> None:
    """Raises ``OriginNotAllowed`` when a browser on another site's page asks for the tenant's
    widget and the tenant does not allow that site. Requests without an ``Origin`` (servers,
    curl, a browser's same-origin GET) and the service's own pages are served."""
    origin = request.headers.get("Origin", "").rstrip("/")
    if not origin or origin == f"{request.scheme}://{request.get_host()}":
        return
    allowed = {o.rstrip("/") for o in [*tenant.allowed_origins, *settings.CORS_ALLOWED_ORIGINS]
               if isinstance(o, str)}
    if origin not in allowed:
        raise OriginNotAllowed(origin, tenant)
