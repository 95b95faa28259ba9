"""CORS for the public widget endpoints: a tenant's pages may call ``/api/chat`` and
``/api/widget`` from the browser when their origin is in the tenant's allowed origins.

django-cors-headers asks ``check_request_enabled`` for every request to a CORS URL; the tenant
is named by the ``tenant`` query parameter (the widget always sends it, preflights included).
Origins in ``CORS_ALLOWED_ORIGINS`` are allowed everywhere, as the library does by itself.
"""

from __future__ import annotations

from tenants.models import Tenant

PUBLIC_WIDGET_PATHS = ("/api/chat", "/api/widget")


def allow_tenant_origins(sender, request, **kwargs) -> bool:
    if not request.path.startswith(PUBLIC_WIDGET_PATHS):
        return False
    origin = request.headers.get("Origin")
    public_id = request.GET.get("tenant", "")
    if not origin or not public_id or len(public_id) > 40:
        return False
    origins = Tenant.objects.filter(public_id=public_id).values_list("allowed_origins", flat=True).first()
    return bool(origins) and origin.rstrip("/") in {o.rstrip("/") for o in origins}
