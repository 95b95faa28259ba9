"""Presence: whether a person of the staff is online, away or offline (docs/dashboard.md,
"Availability and routing").

Every open dashboard tab holds one live stream, and each stream a ``PresenceConnection`` row,
on whichever process serves it: processes keep no state, so the count of a person's tabs is the
count of their rows. The first tab to open makes them online; the last to close, offline. A
stream refreshes its row while it lives; a process that dies leaves rows behind, which expire
after ``CONNECTION_TTL`` and the sweeper (beat) deletes, setting offline whoever has none left.
While a tab is open, a person with no activity (reported by the page) for the tenant's
``presence_idle_seconds`` turns away, and back online at their next activity, unless they chose
away themselves.

Each change of status emits ``user.status_changed``: the person's open pages show it, and
routing offers someone who comes online the handoffs waiting for a person.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from core.errors import FieldError, InvalidRequest
from core.events import emit
from core.models import EventType

from .models import PresenceConnection, User, UserStatus

CONNECTION_TTL = timedelta(seconds=60)
# A stream refreshes its row when less than this is left: one write every ~20 seconds a tab.
REFRESH_MARGIN = timedelta(seconds=40)
CHOOSABLE = (UserStatus.ONLINE, UserStatus.AWAY)


def _locked(user_id: uuid.UUID) -> User | None:
    return User.objects.select_for_update().filter(pk=user_id).first()


def _set_status(user: User, status: str, *, chosen: bool = False) -> None:
    """Saves the person's status (their row locked by the caller), with its event when it
    changed."""
    previous = user.status
    user.status = status
    user.status_chosen = chosen
    user.save(update_fields=["status", "status_chosen", "last_seen_at", "last_active_at"])
    if previous != status and user.tenant_id is not None:
        emit(EventType.USER_STATUS_CHANGED, tenant_id=user.tenant_id, livemode=True,
             description=f"{user.display_name} is {UserStatus(status).label.lower()}",
             facts={"user_id": str(user.pk), "status": status, "previous": previous})


def _live_connections(user_id: uuid.UUID, now: datetime) -> bool:
    return PresenceConnection.objects.filter(user_id=user_id, expires_at__gt=now).exists()


@transaction.atomic
def presence_connect(*, user_id: uuid.UUID, now: datetime | None = None
                     ) -> tuple[uuid.UUID, str] | None:
    """A dashboard tab of the person opened its live stream: their connection's id and their
    status. Their first tab makes them online (an away they chose stays away)."""
    now = now or timezone.now()
    user = _locked(user_id)
    if user is None or not user.is_active:
        return None
    connection = PresenceConnection.objects.create(user=user, opened_at=now,
                                                   expires_at=now + CONNECTION_TTL)
    user.last_seen_at = now
    if user.status == UserStatus.OFFLINE:
        user.last_active_at = now
        _set_status(user, UserStatus.ONLINE)
    else:
        user.save(update_fields=["last_seen_at"])
    return connection.pk, user.status


@transaction.atomic
def presence_refresh(*, connection_id: uuid.UUID, user_id: uuid.UUID,
                     now: datetime | None = None) -> str | None:
    """The tab's stream is still open: its connection lives on, and a person idle for longer
    than the tenant's idle time turns away. Returns their status (None: no longer staff)."""
    now = now or timezone.now()
    refreshed = PresenceConnection.objects.filter(
        pk=connection_id, expires_at__lt=now + REFRESH_MARGIN).update(
        expires_at=now + CONNECTION_TTL)
    if not refreshed and not PresenceConnection.objects.filter(pk=connection_id).exists():
        # Swept while the stream lived (a stalled process): the tab is open, so it counts again.
        PresenceConnection.objects.create(pk=connection_id, user_id=user_id, opened_at=now,
                                          expires_at=now + CONNECTION_TTL)
    user = (User.objects.select_for_update(of=("self",)).select_related("tenant")
            .filter(pk=user_id, is_active=True).first())
    if user is None:
        return None
    user.last_seen_at = now
    idle_since = now - timedelta(seconds=user.tenant.presence_idle_seconds if user.tenant else 600)
    if user.status == UserStatus.OFFLINE:
        user.last_active_at = now
        _set_status(user, UserStatus.ONLINE)
    elif user.status == UserStatus.ONLINE and (user.last_active_at or now) <= idle_since:
        _set_status(user, UserStatus.AWAY)
    else:
        user.save(update_fields=["last_seen_at"])
    return user.status


@transaction.atomic
def presence_disconnect(*, connection_id: uuid.UUID, now: datetime | None = None) -> None:
    """The tab's stream closed: its connection goes, and with the person's last, they are
    offline."""
    now = now or timezone.now()
    connection = PresenceConnection.objects.filter(pk=connection_id).first()
    if connection is None:
        return
    user = _locked(connection.user_id)
    connection.delete()
    if user is not None and user.status != UserStatus.OFFLINE and not _live_connections(user.pk, now):
        _set_status(user, UserStatus.OFFLINE)


@transaction.atomic
def presence_activity(*, user: User, now: datetime | None = None) -> User:
    """The person used a dashboard page (a key, a click, the mouse, the page coming back into
    view): an away that idleness brought ends."""
    now = now or timezone.now()
    current = _locked(user.pk)
    if current is None:
        return user
    current.last_active_at = now
    current.last_seen_at = now
    if current.status == UserStatus.AWAY and not current.status_chosen:
        _set_status(current, UserStatus.ONLINE)
    else:
        current.save(update_fields=["last_active_at", "last_seen_at"])
    return current


@transaction.atomic
def user_set_status(*, user: User, status: str, now: datetime | None = None) -> User:
    """The person chooses online or away in the dashboard's header; offline follows from their
    tabs alone."""
    if status not in CHOOSABLE:
        raise InvalidRequest("Choose online or away.",
                             details=[FieldError("status", "invalid_choice",
                                                 "Choose online or away.")])
    now = now or timezone.now()
    current = _locked(user.pk)
    if current is None:
        return user
    current.last_seen_at = now
    if status == UserStatus.ONLINE:
        current.last_active_at = now
    _set_status(current, status, chosen=status == UserStatus.AWAY)
    return current


def presence_sweep(*, now: datetime | None = None, batch: int = 500) -> int:
    """Beat: deletes the connections no stream refreshed (their process died) and sets offline
    whoever has none left; returns how many people went offline."""
    now = now or timezone.now()
    PresenceConnection.objects.filter(expires_at__lte=now).delete()
    ids = list(User.objects.exclude(status=UserStatus.OFFLINE)
               .exclude(presence_connections__expires_at__gt=now)
               .values_list("pk", flat=True)[:batch])
    return sum(_sweep_one(pk, now) for pk in ids)


@transaction.atomic
def _sweep_one(pk: uuid.UUID, now: datetime) -> bool:
    user = _locked(pk)
    if user is None or user.status == UserStatus.OFFLINE or _live_connections(pk, now):
        return False
    _set_status(user, UserStatus.OFFLINE)
    return True
