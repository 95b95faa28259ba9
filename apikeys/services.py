"""Issuing, rotating, revoking and checking API keys."""

from __future__ import annotations

import secrets
import string
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.crypto import digest
from core.errors import Conflict, FieldError, Unprocessable
from core.sql import ModelColumns, fetch_one, quote
from tenants.models import Tenant

from . import liveness
from .models import ROTATION_GRACE, ApiKey, IdempotencyKey, IdempotencyState, KeyStatus, Scope

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
    """Ends the grace period of every key that ``key`` replaced ("Revoke Old Key"): the one it
    replaced directly and, up the chain of rotations, the ones before it (after K1 → K2 → K3,
    revoking K3's old keys ends K2's grace and K1's, whatever became of K2 meanwhile)."""
    now = timezone.now()
    old: list[ApiKey] = []
    seen, frontier = {key.pk}, [key.pk]
    while frontier:
        replaced = list(ApiKey.objects.select_for_update()
                        .filter(tenant_id=key.tenant_id, replaced_by_id__in=frontier)
                        .exclude(pk__in=seen).order_by("created_at", "id"))
        seen.update(k.pk for k in replaced)
        frontier = [k.pk for k in replaced]
        old += [k for k in replaced if k.status_at(now) == KeyStatus.GRACE]
    if not old:
        raise Conflict("This key replaced no key that is still in its grace period.")
    for k in old:
        k.revoked_at = now
        k.save(update_fields=["revoked_at"])
    return old


# Every authenticated request runs this, so it is written out (core/sql.py).
_KEY_COLUMNS = ModelColumns(ApiKey, "k")
_TENANT_COLUMNS = ModelColumns(Tenant, "t")
_KEY_WITH_TENANT = (
    f"SELECT {_KEY_COLUMNS.sql}, {_TENANT_COLUMNS.sql} FROM {quote(ApiKey._meta.db_table)} k "
    f"JOIN {quote(Tenant._meta.db_table)} t ON t.{quote(Tenant._meta.pk.column)} = k.\"tenant_id\" "
    "WHERE k.\"hashed_key\" = %s"
)


def api_key_authenticate(raw: str) -> ApiKey | None:
    """The usable key whose secret is ``raw``, with its tenant loaded; None otherwise."""
    if not raw.startswith((LIVE_PREFIX, TEST_PREFIX)) or len(raw) > 100:
        return None
    # By its unique hash: one plan for every key, prepared once per connection.
    row = fetch_one(_KEY_WITH_TENANT, [digest(raw)], prepared=True)
    if row is None:
        return None
    key = _KEY_COLUMNS.load(row[:len(_KEY_COLUMNS)])
    key.tenant = _TENANT_COLUMNS.load(row[len(_KEY_COLUMNS):])
    now = timezone.now()
    if key.status_at(now) == KeyStatus.REVOKED:
        return None
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


# --- Idempotency keys (Stripe's semantics; docs/idempotency.md) -------------------------------

IDEMPOTENCY_TTL = timezone.timedelta(hours=24)


class IdempotencyKeyReused(Unprocessable):
    default_message = (
        "This Idempotency-Key was used in the last 24 hours with a different request (method, "
        "path or body). Use a new key for a new request."
    )


class IdempotencyKeyInUse(Conflict):
    default_message = (
        "A request with this Idempotency-Key is still being processed. Retry once it has "
        "completed to receive its response."
    )


class IdempotencyKeyTakenOver(Conflict):
    default_message = (
        "A retry with this Idempotency-Key took over while this request was running; this "
        "request did nothing. The retry's response is given to the key."
    )


@dataclass(frozen=True)
class StoredResponse:
    """The first response given to an idempotency key, to be given again."""

    status: int
    headers: dict[str, str]
    body: bytes


def idempotency_claim(
    *, api_key: ApiKey, key: str, fingerprint: str
) -> IdempotencyKey | StoredResponse:
    """Claims ``key`` for a request about to run, or says what to do instead.

    Returns the in-progress record that the caller now owns (run the request, then
    :func:`idempotency_complete` or :func:`idempotency_release`), or the stored response of the
    first request with this key and fingerprint. Raises :class:`IdempotencyKeyReused` (422) for
    another fingerprint and :class:`IdempotencyKeyInUse` (409) while the first request still runs.
    Records older than 24 hours count as absent. An in-progress record is taken over at once when
    its request died before it wrote anything (its owner is gone, ``apikeys.liveness``), and in
    any case once it is older than ``IDEMPOTENCY_LOCK_SECONDS``.
    """
    lock = timezone.timedelta(seconds=settings.IDEMPOTENCY_LOCK_SECONDS)
    for _ in range(3):  # each pass either decides or lost a race that changed the row
        now = timezone.now()
        created = _idempotency_insert(api_key=api_key, key=key, fingerprint=fingerprint, now=now)
        if created is not None:
            return created
        record = IdempotencyKey.objects.filter(api_key=api_key, key=key).first()
        if record is None:
            continue  # purged between the insert and the read
        decided = _idempotency_existing(record, fingerprint=fingerprint, now=now, lock=lock)
        if decided is not None:
            return decided
    raise IdempotencyKeyInUse()


def _idempotency_insert(*, api_key: ApiKey, key: str, fingerprint: str, now
                        ) -> IdempotencyKey | None:
    """A new in-progress record for the key; None when the key already has one."""
    try:
        with transaction.atomic():
            return IdempotencyKey.objects.create(
                tenant_id=api_key.tenant_id, livemode=api_key.livemode, api_key=api_key,
                key=key, fingerprint=fingerprint, created_at=now, locked_at=now,
                owner=liveness.current_owner(),
            )
    except IntegrityError:
        return None


def _idempotency_existing(record: IdempotencyKey, *, fingerprint: str, now, lock
                          ) -> IdempotencyKey | StoredResponse | None:
    """What to do about the key's existing record: take it over, replay its response, or
    refuse; None when another request changed the record first (look at it again)."""
    if record.created_at <= now - IDEMPOTENCY_TTL:
        # Expired: the key is free again. Compare-and-swap on locked_at, so that of two
        # requests reviving it at once only one runs.
        return _idempotency_take(record, fingerprint=fingerprint, created_at=now, now=now)
    if record.fingerprint != fingerprint:
        raise IdempotencyKeyReused()
    if record.state == IdempotencyState.COMPLETED:
        return StoredResponse(status=record.response_status or 200,
                              headers=dict(record.response_headers or {}),
                              body=bytes(record.response_body or b""))
    if record.locked_at > now - lock:
        # Its request may still run: it does unless it is gone, and one that wrote must not be
        # run again (the take's condition on ``written`` waits for a write in flight to end).
        if record.written or not liveness.owner_gone(record.owner):
            raise IdempotencyKeyInUse()
        return _idempotency_take(record, fingerprint=fingerprint, created_at=record.created_at,
                                 now=now, unwritten=True)
    return _idempotency_take(record, fingerprint=fingerprint, created_at=record.created_at,
                             now=now)


def _idempotency_take(record: IdempotencyKey, *, fingerprint: str, created_at, now,
                      unwritten: bool = False) -> IdempotencyKey | None:
    """Compare-and-swap on ``locked_at``: of two requests taking the record over, one wins, and
    the request that held it can no longer store, release or mark it. ``unwritten``: only if it
    has written nothing."""
    taken = IdempotencyKey.objects.filter(pk=record.pk, locked_at=record.locked_at)
    if unwritten:
        taken = taken.filter(written=False)
    owner = liveness.current_owner()
    changed = taken.update(
        fingerprint=fingerprint, state=IdempotencyState.IN_PROGRESS, created_at=created_at,
        locked_at=now, response_status=None, response_headers={}, response_body=b"",
        owner=owner, written=False,
    )
    if not changed:
        return None
    record.fingerprint, record.state = fingerprint, IdempotencyState.IN_PROGRESS
    record.created_at, record.locked_at = created_at, now
    record.owner, record.written = owner, False
    return record


def idempotency_mark_written(*, record: IdempotencyKey) -> None:
    """Marks that the request holding ``record`` writes to the database; called in each of its
    transactions that write, before the first write, so that the mark commits with the writes or
    not at all. A record taken over meanwhile by a retry raises :class:`IdempotencyKeyTakenOver`,
    which rolls the transaction back: the retry, not this request, does the work."""
    marked = IdempotencyKey.objects.filter(
        pk=record.pk, locked_at=record.locked_at, state=IdempotencyState.IN_PROGRESS
    ).update(written=True)
    if not marked:
        raise IdempotencyKeyTakenOver()


def idempotency_complete(
    *, record: IdempotencyKey, status: int, headers: dict[str, str], body: bytes
) -> None:
    """Stores the response of the request that owns ``record`` (if it still owns it)."""
    IdempotencyKey.objects.filter(
        pk=record.pk, locked_at=record.locked_at, state=IdempotencyState.IN_PROGRESS
    ).update(state=IdempotencyState.COMPLETED, response_status=status, response_headers=headers,
             response_body=body)


def idempotency_release(*, record: IdempotencyKey) -> None:
    """Forgets ``record`` without a response, so that a retry with its key runs afresh (after a
    server error, a 429, or a streamed response that cannot be stored)."""
    IdempotencyKey.objects.filter(
        pk=record.pk, locked_at=record.locked_at, state=IdempotencyState.IN_PROGRESS
    ).delete()


def idempotency_keys_purge(*, batch: int = 5000) -> int:
    """Deletes expired records in bounded batches; returns how many went."""
    cutoff = timezone.now() - IDEMPOTENCY_TTL
    total = 0
    while True:
        ids = list(IdempotencyKey.objects.filter(created_at__lt=cutoff)
                   .values_list("pk", flat=True)[:batch])
        if not ids:
            return total
        total += IdempotencyKey.objects.filter(pk__in=ids).delete()[0]
