"""Reads of the calendars app: always scoped to a tenant (and, for a rep's own page, a user)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from .models import CalendarConnection, MeetingCalendarWrite, WriteStatus


def connected(tenant: Any) -> list[CalendarConnection]:
    """The tenant's verified calendars of active users, in a stable order: a deactivated
    rep's calendar is neither read for free slots nor given meetings."""
    return list(CalendarConnection.objects.filter(
        tenant=tenant, verified_at__isnull=False, user__is_active=True, user__tenant=tenant,
    ).select_related("user").order_by("created_at", "id"))


def tenant_has_calendars(tenant_id: Any) -> bool:
    return CalendarConnection.objects.filter(tenant_id=tenant_id, verified_at__isnull=False,
                                             user__is_active=True).exists()


def connection_of(*, tenant: Any, user: Any) -> CalendarConnection | None:
    """A user's own connection; None for another tenant's user."""
    if user is None:
        return None
    return CalendarConnection.objects.filter(tenant=tenant, user=user).first()


def host_writes(*, tenant: Any, user: Any, limit: int = 20) -> QuerySet[MeetingCalendarWrite]:
    """The meetings with this rep whose calendar write is not done (pending or failed)."""
    return (MeetingCalendarWrite.objects
            .filter(tenant=tenant, host=user, status__in=[WriteStatus.PENDING, WriteStatus.FAILED])
            .select_related("meeting", "meeting__lead").order_by("-created_at", "meeting_id")[:limit])


def meeting_writes(*, tenant: Any, livemode: bool, meeting_ids: list[Any]
                   ) -> dict[Any, MeetingCalendarWrite]:
    """The calendar write of each of these meetings that has one, by meeting id."""
    rows = (MeetingCalendarWrite.objects
            .filter(tenant=tenant, meeting__livemode=livemode, meeting_id__in=meeting_ids)
            .select_related("host"))
    return {row.meeting_id: row for row in rows}


def write_get(*, tenant: Any, livemode: bool, meeting_id: Any, host: Any = None
              ) -> MeetingCalendarWrite | None:
    """One meeting's calendar write in this tenant and mode; with ``host``, only theirs."""
    found = (MeetingCalendarWrite.objects.select_related("meeting")
             .filter(tenant=tenant, meeting__livemode=livemode, pk=meeting_id))
    if host is not None:
        found = found.filter(host=host)
    return found.first()
