"""Presence and availability (docs/dashboard.md, "Availability and routing"): the person's own
live stream (every dashboard page holds one: handoffs given to them, their status), the status
they choose in the header, the activity their pages report, and the form of their availability
(time zone, working hours, capacity), a section of My profile (``account.profile_availability``)."""

from __future__ import annotations

import asyncio
import time
import uuid

from asgiref.sync import sync_to_async
from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from conversations import live
from conversations.api.sse import event_stream_response, frame
from core.errors import ServiceError
from tenants import presence
from tenants import services as tenant_services
from tenants.availability import tenant_hours

from ..auth import dashboard_view, resolve_actor
from .common import TimeZoneField, attempt, refuse_on_form, safe_next
from .settings import DAYS, HOURS

# How often a page's stream checks in (its connection lives on; idleness turns away): a quarter
# of the tenant's idle time, within these bounds.
TICK_SECONDS = (0.5, 15.0)
# A page that goes away still counts this long: following a link closes one page's stream just
# before the next page opens its own, which must not make the person offline in between.
LEAVE_GRACE_SECONDS = 3.0


def presence_tick(idle_seconds: int) -> float:
    low, high = TICK_SECONDS
    return max(low, min(high, idle_seconds / 4))


def _stream_person(request: HttpRequest) -> tuple[uuid.UUID, float] | None:
    actor = resolve_actor(request)
    if actor is None or actor.user is None:
        return None
    return actor.user.pk, presence_tick(actor.tenant.presence_idle_seconds)


async def live_events(request: HttpRequest) -> HttpResponse:
    """Server-Sent Events of the signed-in person, for every dashboard page: ``presence`` (their
    status, first as it is once the page counts as one of their tabs) and ``handoff`` (a
    conversation given to them). The admin token is nobody: 204, which tells EventSource to stop."""
    person = await sync_to_async(_stream_person)(request)
    if person is None:
        return HttpResponse(status=204)
    user_id, tick = person
    opened: dict[str, uuid.UUID | None] = {"connection": None}

    async def connect() -> dict[str, str | None]:
        connected = await sync_to_async(presence.presence_connect)(user_id=user_id)
        opened["connection"], status = connected or (None, None)
        return {"status": status}

    async def frames():
        checked = time.monotonic()
        try:
            async for item in live.listen_group(live.user_group(user_id), snapshot=connect,
                                                keepalive=tick):
                if opened["connection"] is None:
                    return
                if time.monotonic() - checked >= tick:
                    checked = time.monotonic()
                    if await sync_to_async(presence.presence_refresh)(
                            connection_id=opened["connection"], user_id=user_id) is None:
                        return
                if item is None:
                    yield b": keep-alive\n\n"
                else:
                    event, data = item
                    yield frame("presence" if event == "session" else event, data)
        finally:
            if opened["connection"] is not None:
                await asyncio.shield(_leave(opened["connection"]))

    return event_stream_response(frames())


async def _leave(connection_id: uuid.UUID) -> None:
    await asyncio.sleep(LEAVE_GRACE_SECONDS)
    await sync_to_async(presence.presence_disconnect)(connection_id=connection_id)


@require_POST
@dashboard_view()
def presence_set(request: HttpRequest) -> HttpResponse:
    """The status the person chooses in the header: online, or away (routing skips them)."""
    user = request.actor.user
    back = safe_next(request, "/dashboard/")
    if user is None:
        messages.error(request, "The admin token is nobody in particular: it has no status.")
        return redirect(back)
    status = request.POST.get("status", "")
    attempt(request, lambda: presence.user_set_status(user=user, status=status),
            "You are online: handoffs come to you." if status == "online"
            else "You are away: handoffs go to others until you are back.")
    return redirect(back)


@require_POST
@dashboard_view()
def presence_activity(request: HttpRequest) -> HttpResponse:
    """A page reports that its person is using it (a key, a click, the pointer, the page coming
    back into view): 204."""
    if request.actor.user is not None:
        presence.presence_activity(user=request.actor.user)
    return HttpResponse(status=204)


class AvailabilityForm(forms.Form):
    timezone = TimeZoneField(required=False, label="Time zone",
                             help_text="Type a city or region and pick it from the list; blank: "
                                       "the team's.")
    own_hours = forms.BooleanField(required=False, label="I have my own working hours")
    days = forms.TypedMultipleChoiceField(choices=DAYS, coerce=int, required=False,
                                          widget=forms.CheckboxSelectMultiple, label="Working days")
    start_hour = forms.TypedChoiceField(choices=HOURS[:-1], coerce=int, label="From")
    end_hour = forms.TypedChoiceField(choices=HOURS[1:], coerce=int, label="To")
    capacity = forms.IntegerField(min_value=1, max_value=tenant_services.MAX_CAPACITY,
                                  label="Capacity",
                                  help_text="The most open handoffs assigned to me at once.")


def availability_initial(user, tenant) -> dict:
    """The availability form as saved: the person's own hours, else the tenant's."""
    hours = user.working_hours or tenant_hours(tenant)
    return {"timezone": user.timezone, "own_hours": bool(user.working_hours),
            "days": hours["days"], "start_hour": hours["start_hour"],
            "end_hour": hours["end_hour"], "capacity": user.capacity}


def availability_save(request: HttpRequest, form: AvailabilityForm, user) -> bool:
    """Saves a valid form through the services; False (the reasons on the form) if refused."""
    data = form.cleaned_data
    hours = ({"days": data["days"], "start_hour": data["start_hour"],
              "end_hour": data["end_hour"]} if data["own_hours"] else None)
    try:
        tenant_services.user_set_availability(user=user, timezone_name=data["timezone"].strip(),
                                              working_hours=hours, capacity=data["capacity"])
    except ServiceError as exc:
        refuse_on_form(form, exc, {"working_hours": "days", "start_hour": "start_hour",
                                   "end_hour": "end_hour"})
        return False
    messages.success(request, "Your availability is saved.")
    return True
