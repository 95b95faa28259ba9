"""CORS for the public widget endpoints: a tenant's pages may call ``/api/chat`` and
``/api/widget`` from the browser when their origin is in the tenant's allowed origins.

django-cors-headers does the CORS work and asks ``check_request_enabled`` about each request.
It asks synchronously, also under ASGI, where no query may run; so ``WidgetOriginsMiddleware``,
placed before it, looks the tenant's origins up first (off the event loop) and the signal
handler only reads the answer. The tenant is named by the ``tenant`` query parameter, which the
widget always sends (preflights included). Origins in ``CORS_ALLOWED_ORIGINS`` are allowed
everywhere, as the library does by itself.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async

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
