"""Rate limits of both surfaces, counted in the shared cache (Redis in production).

How an endpoint takes part (docs/rate-limits.md has the whole story):

- Every API view derives from ``V1Mixin``, ``LegacyMixin`` or ``PublicMixin`` (config/api/views.py),
  whose ``initial()`` counts the request and whose ``finalize_response()`` adds the
  ``X-RateLimit-*`` headers. No endpoint can skip it.
- A v1 view names its per-endpoint bucket with a class attribute, a string or a mapping from HTTP
  method or viewset action to bucket::

      rate_limit_bucket = "lead_create"                                  # one bucket
      rate_limit_bucket = {"create": "lead_create", "search": "lead_search"}  # others: default

  Buckets: ``default`` (when unset), ``chat``, ``chat_stream``, ``analytics``, ``lead_create``,
  ``lead_search``. A bucket that depends on the request overrides ``get_rate_limit_bucket``::

      def get_rate_limit_bucket(self, request) -> str:
          return "chat_stream" if request.data.get("stream") is True else "chat"

- A public view names ``public_chat``, ``public_widget`` or ``public_health`` and, when the
  request names a tenant, returns it from ``rate_limit_tenant(request)`` so that the tenant's
  public budget applies too.
- Concurrency: a v1 request holds one of its key's slots from ``initial()`` until its response
  is ready, or, for a ``StreamingHttpResponse``, until the stream ends or the client leaves. A
  streaming chat view therefore needs nothing more than to return its stream. Code outside the
  DRF views takes a slot with ``aacquire`` and keeps it with ``concurrency.guard_stream``.
"""

from .core import (
    Decision,
    Limit,
    Slot,
    Slots,
    aacquire,
    acquire,
    add,
    check,
    counter_key,
    holders,
    peek,
)
from .network import client_address
from .store import get_store
from .tables import BUCKETS, PUBLIC_BUCKETS, V1_BUCKETS

__all__ = [
    "BUCKETS", "PUBLIC_BUCKETS", "V1_BUCKETS", "Decision", "Limit", "Slot", "Slots", "aacquire",
    "acquire", "add", "check", "client_address", "counter_key", "get_store", "holders", "peek",
]
