"""Rate limiting of every API view, hooked into DRF's ``initial()`` and ``finalize_response()``.

The order of ``initial()``: the transport check (HTTPS on v1) and authentication first; then the
limiter counts the request, per key when a key authenticated it and per client address when none
did (so a 401 is counted and carries headers too); then DRF's own ``initial()`` (permissions,
whose 403 is therefore counted as well). A refusal raises :class:`core.errors.RateLimited`,
which each surface's exception handler renders as its 429.

``finalize_response()`` adds the binding limit's ``X-RateLimit-*`` headers and gives back the
concurrency slot, or hands it to the stream of a streaming response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.core.exceptions import ImproperlyConfigured
from rest_framework.exceptions import APIException

from apikeys.authentication import Caller
from config import ratelimit
from config.ratelimit import concurrency, policy
from core.errors import ServiceError
from tenants.models import Tenant


def authenticated_caller(request) -> Caller | None:
    """The caller if authentication ran and succeeded, without forcing it to run (a view such as
    the legacy login skips authentication on purpose)."""
    user = vars(request).get("_user")
    return user if isinstance(user, Caller) else None


def _bucket_names(value: str | Mapping[str, str]) -> list[str]:
    if isinstance(value, Mapping):
        return list(value.values())
    return [value]


class RateLimitMixin:
    """Counts every request of the view against its limits; see ``config/ratelimit``.

    Subclasses declare ``rate_limit_bucket`` (a bucket name, or a mapping from HTTP method or
    viewset action to bucket name; unmapped methods fall in "default") and may override
    ``get_rate_limit_bucket(request)`` and, for public views, ``rate_limit_tenant(request)``.
    """

    surface = "legacy"
    rate_limit_bucket: str | Mapping[str, str] = "default"
    rate_limit: ratelimit.Decision | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("rate_limit_bucket")
        if declared is None:
            return
        unknown = [name for name in _bucket_names(declared) if name not in ratelimit.BUCKETS]
        if unknown:
            raise ImproperlyConfigured(
                f"{cls.__name__}.rate_limit_bucket names unknown bucket(s) {unknown}; "
                f"known: {sorted(ratelimit.BUCKETS)}"
            )

    def get_rate_limit_bucket(self, request) -> str:
        bucket = self.rate_limit_bucket
        if isinstance(bucket, Mapping):
            action = getattr(self, "action", None) or ""
            return bucket.get(request.method) or bucket.get(action) or "default"
        return bucket

    def rate_limit_tenant(self, request) -> Tenant | None:
        """The tenant a public request is for, when it names one (public views override)."""
        return None

    def check_transport(self, request) -> None:
        """Refuses a request before authentication (the v1 HTTPS rule)."""

    def initial(self, request, *args, **kwargs):
        self.rate_limit = None
        try:
            self.check_transport(request)
            self.perform_authentication(request)
        except (APIException, ServiceError):
            # No valid credentials: count against the client address. Past its limit the 429
            # replaces the 401 (or 403), which is what a client retrying bad keys should see.
            # (Authentication that could not run, the database being down, is no refusal: it
            # is answered 503 and counted nowhere, docs/rate-limits.md, "Failure".)
            self.enforce_rate_limits(request, None, failing=True)
            raise
        self.enforce_rate_limits(request, authenticated_caller(request))
        super().initial(request, *args, **kwargs)

    def enforce_rate_limits(self, request, caller: Caller | None, *, failing: bool = False) -> None:
        bucket, deferred = self._chosen_bucket(request)
        limits, slots, tenant_error = self._limits_for(request, caller, bucket)
        decision = ratelimit.check(limits, slots=slots)
        self.rate_limit = decision
        if decision is not None and not decision.allowed:
            raise decision.error()
        deferred = deferred or tenant_error
        if deferred is not None and not failing:
            raise deferred

    def _chosen_bucket(self, request) -> tuple[str, Exception | None]:
        """The request's bucket, and the error that choosing it raised, if any. The hook may read
        the body: when that is broken the request is counted in the bucket the class declares,
        and fails the way the view would have once it has been counted."""
        try:
            bucket, error = self.get_rate_limit_bucket(request), None
        except Exception as exc:
            bucket, error = RateLimitMixin.get_rate_limit_bucket(self, request), exc
        if bucket not in ratelimit.BUCKETS:
            raise ImproperlyConfigured(f"{type(self).__name__} chose unknown bucket {bucket!r}")
        return bucket, error

    def _limits_for(self, request, caller: Caller | None, bucket: str) -> tuple[
            Sequence[ratelimit.Limit], ratelimit.Slots | None, Exception | None]:
        """The limits and concurrency slots that apply (docs/rate-limits.md), and the error of the
        public tenant hook, if it raised (the request is then counted without a tenant)."""
        if caller is not None and self.surface == "v1":
            v1_bucket = bucket if bucket in ratelimit.V1_BUCKETS else "default"
            return policy.v1_limits(caller, v1_bucket), policy.v1_slots(caller), None
        if caller is not None:
            return policy.legacy_limits(caller), None, None
        address = ratelimit.client_address(request)
        if bucket not in ratelimit.PUBLIC_BUCKETS:
            return policy.anonymous_limits(address), None, None
        try:
            tenant, error = self.rate_limit_tenant(request), None
        except Exception as exc:
            tenant, error = None, exc
        return policy.public_limits(bucket, address, tenant), None, error

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        decision = self.rate_limit
        if decision is not None:
            for name, value in decision.headers().items():
                response[name] = value
            slot = decision.slot
            if slot is not None and not slot.released:
                if getattr(response, "streaming", False):
                    response.streaming_content = concurrency.guard_stream(
                        slot, response.streaming_content)
                else:
                    # Held until the answer is sent: released by ``response.close()``, which
                    # the server calls after the last byte, so the Redis round trip is not
                    # part of the client's wait.
                    response._resource_closers.append(slot.release)
        return response
