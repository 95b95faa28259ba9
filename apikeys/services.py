"""Issuing, rotating, revoking and checking API keys."""

from __future__ import annotations

import secrets
import string

from django.db import transaction
from django.utils import timezone

from config.errors import Conflict, FieldError, Unprocessable
from tenants.crypto import digest
from tenants.models import Tenant

from .models import ROTATION_GRACE, ApiKey, KeyStatus, Scope

LIVE_PREFIX = "sk_live_"
TEST_PREFIX = "sk_test_"
_ALPHABET = string.ascii_letters + string.digits
_SECRET_LENGTH = 40  # ~238 bits
# Writing last_used_at on every request would turn every read into a write; once a minute is
# precise enough for "last used" in a dashboard.
LAST_USED_RESOLUTION = timezone.timedelta(seconds=60)


def _new_secret(livemode: bool) -> str:
    body = "".join(secrets.choice(_ALPHABET) for _ in range(_SECRET_LENGTH))
    return (LIVE_PREFIX if livemode else TEST_PREFIX) + body


def _issue(
    *, tenant: Tenant, name: str, scope: str, livemode: bool, created_by: str = ""
) -> tuple[ApiKey, str]:
    raw = _new_secret(livemode)
    key = ApiKey.objects.create(
        tenant=tenant,
        livemode=livemode,
        name=name,
        scope=scope,
        prefix=raw[: len(LIVE_PREFIX) + 4],
        last4=raw[-4:],
        hashed_key=digest(raw),
        created_by=created_by,
    )
    return key, raw


def _validate(name: str, scope: str) -> str:
    name = (name or "").strip()
    details = []
    if not name:
        details.append(FieldError("name", "required", "A key needs a descriptive name."))
    elif len(name) > 100:
        details.append(FieldError("name", "too_long", "At most 100 characters."))
    if scope not in Scope.values:
        details.append(FieldError("scope", "invalid_enum", "One of read, write, admin."))
    if details:
        raise Unprocessable("The key cannot be created.", details=details)
    return name


def api_key_create(
    *, tenant: Tenant, name: str, scope: str, livemode: bool, created_by: str = ""
) -> tuple[ApiKey, str]:
    """Issues a key; returns the row and the secret, which is shown only this once."""
    name = _validate(name, scope)
    return _issue(tenant=tenant, name=name, scope=scope, livemode=livemode, created_by=created_by)


@transaction.atomic
def api_key_rotate(*, key: ApiKey, created_by: str = "") -> tuple[ApiKey, str]:
    """Replaces an active key: the new one works at once, the old one for 24 hours more."""
    key = ApiKey.objects.select_for_update().get(pk=key.pk)
    now = timezone.now()
    if key.status_at(now) != KeyStatus.ACTIVE:
        raise Conflict("Only an active key can be rotated.")
    new_key, raw = _issue(
        tenant=key.tenant, name=key.name, scope=key.scope, livemode=key.livemode,
        created_by=created_by,
    )
    key.expires_at = now + ROTATION_GRACE
    key.replaced_by = new_key
    key.save(update_fields=["expires_at", "replaced_by"])
    return new_key, raw


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    """Revokes a key at once (idempotent: revoking a revoked key changes nothing)."""
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


@transaction.atomic
def api_key_revoke_old(*, key: ApiKey) -> list[ApiKey]:
    """Ends the grace period of the keys that ``key`` replaced ("Revoke Old Key")."""
    now = timezone.now()
    old = [
        k for k in ApiKey.objects.select_for_update().filter(replaced_by=key)
        if k.status_at(now) == KeyStatus.GRACE
    ]
    if not old:
        raise Conflict("This key replaced no key that is still in its grace period.")
    for k in old:
        k.revoked_at = now
        k.save(update_fields=["revoked_at"])
    return old


def api_key_authenticate(raw: str) -> ApiKey | None:
    """The usable key whose secret is ``raw``, with its tenant loaded; None otherwise."""
    if not raw.startswith((LIVE_PREFIX, TEST_PREFIX)) or len(raw) > 100:
        return None
    key = ApiKey.objects.select_related("tenant").filter(hashed_key=digest(raw)).first()
    if key is None:
        return None
    now = timezone.now()
    if key.status_at(now) == KeyStatus.REVOKED:
        return None
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key
