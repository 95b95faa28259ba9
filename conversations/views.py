"""The pages behind the signed links of a meeting email (``conversations.links``): the visitor
reschedules or cancels without signing in. A GET only shows what the link would do and asks to
confirm; only the POST of that page acts (docs/meetings.md, "Links")."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from config.api.errors import V1_STATUS
from core.errors import ServiceError

from . import links, scheduling
from .models import Meeting, MeetingStatus
from .services.meetings import meeting_cancel, meeting_reschedule

RESCHEDULE_CHOICES = 5
TEMPLATE = "meetings/link.html"


def _page(request: HttpRequest, context: dict, status: int = 200) -> HttpResponse:
    response = render(request, TEMPLATE, context, status=status)
    # The token is a credential: keep it out of other sites' Referer headers and of caches. Not
    # no-referrer: under it browsers send "Origin: null" with the page's own form, which
    # Django's CSRF check refuses (403), so no visitor could cancel or reschedule.
    response["Referrer-Policy"] = "same-origin"
    response["Cache-Control"] = "no-store"
    return response


def _problem(request: HttpRequest, status: int, message: str, meeting: Meeting | None = None
             ) -> HttpResponse:
    return _page(request, {"problem": message, "meeting": meeting,
                           "tenant": meeting.tenant if meeting else None}, status=status)


@require_http_methods(["GET", "POST"])
def meeting_link(request: HttpRequest, token: str) -> HttpResponse:
    try:
        link = links.link_read(token)
    except links.LinkExpired:
        return _problem(request, 410, "This link has expired. Reply to the invitation email to "
                                      "change your meeting.")
    except links.LinkInvalid:
        return _problem(request, 404, "This link is not valid.")
    meeting = (Meeting.objects.select_related("tenant", "lead", "host", "conversation")
               .filter(pk=link.meeting_id).first())
    if meeting is None:
        return _problem(request, 404, "This meeting no longer exists.")
    now = timezone.now()
    context = {"meeting": meeting, "tenant": meeting.tenant, "action": link.action,
               "when": _when(meeting)}
    if meeting.status != MeetingStatus.SCHEDULED or meeting.starts_at <= now:
        return _page(request, {**context, "closed": True})
    if request.method == "GET":
        return _page(request, {**context, **_choices(meeting, now)})
    return _act(request, link.action, meeting, context, now)


def _choices(meeting: Meeting, now) -> dict:
    if meeting.status != MeetingStatus.SCHEDULED:
        return {}
    return {"slots": scheduling.free_slots(meeting.tenant, meeting.livemode, now=now,
                                           count=RESCHEDULE_CHOICES,
                                           view=scheduling.meeting_view(meeting))}


def _when(meeting: Meeting) -> str:
    """The meeting's time as its visitor reads it: in the zone of the chat that booked it."""
    return scheduling.make_slot(meeting.tenant, meeting.starts_at,
                                scheduling.meeting_view(meeting)).label


def _act(request: HttpRequest, action: str, meeting: Meeting, context: dict, now) -> HttpResponse:
    try:
        if action == "cancel":
            meeting = meeting_cancel(meeting=meeting, by="visitor", now=now)
        else:
            start = scheduling.parse_token(request.POST.get("slot", ""))
            if start is None:
                return _page(request, {**context, **_choices(meeting, now),
                                       "problem": "Choose one of the times below."}, status=400)
            meeting = meeting_reschedule(meeting=meeting, starts_at=start, now=now)
    except ServiceError as exc:
        return _page(request, {**context, **_choices(meeting, now), "problem": exc.message},
                     status=V1_STATUS[exc.kind])
    return _page(request, {**context, "meeting": meeting, "done": True, "when": _when(meeting)})
