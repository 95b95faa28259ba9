"""Conversations: the list (tabs, filters, search, unread markers), transcripts, the handoffs
assigned to me, and the human takeover (reply, hand back to the agent, close), with the
transcript kept live by the conversation's event stream. The inbox's own actions on a
conversation (tags, notes, typing, read markers) are in ``inbox``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from asgiref.sync import sync_to_async
from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from conversations import live
from conversations import selectors as conversation_selectors
from conversations import services as conversation_services
from conversations.api.sse import event_stream_response, frame
from conversations.attachments import (
    ACCEPT_ATTRIBUTE,
    ACCEPTED,
    file_response,
    limit_uploads,
    read_upload,
)
from conversations.models import Channel, ConversationStatus
from conversations.search import MAX_QUERY, excerpt
from conversations.visitor import visitor_of
from core.timestamps import parse_timestamp
from tenants import selectors as tenant_selectors
from tenants.models import StaffAccessAction
from tenants.services import record_staff_access

from ..auth import dashboard_view, resolve_actor
from .common import attempt, page_of, query_without, query_without_page
from .inbox import canned_for, note_rows, team_handles

TRANSCRIPT_CAP = 500
# Tab: its label and the statuses it lists (None: every status). "mine" also needs a person.
TABS = {
    "mine": ("Assigned to me", (ConversationStatus.HANDED_OFF,)),
    "handed_off": ("All handoffs", (ConversationStatus.HANDED_OFF,)),
    # Handoffs nobody was available for, waiting for a person (docs/dashboard.md).
    "unassigned": ("Unassigned", (ConversationStatus.HANDED_OFF,)),
    "active": ("Active", (ConversationStatus.ACTIVE,)),
    "ended": ("Ended", (ConversationStatus.CLOSED, ConversationStatus.EXPIRED)),
    "all": ("All", None),
}


def _tab(request: HttpRequest) -> str:
    """The tab asked for; staff start on their own handoffs, the admin token on all of them."""
    person = request.actor.user is not None
    tab = request.GET.get("view") or ("mine" if person else "handed_off")
    if tab not in TABS or (tab == "mine" and not person):
        return "all"
    return tab


def _page_number(request: HttpRequest) -> int:
    try:
        return max(1, int(request.GET.get("page", "1")))
    except ValueError:
        return 1


@dashboard_view()
def conversation_index(request: HttpRequest) -> HttpResponse:
    """The list: a tab, a channel and a tag filter it; a search (``q``) lists the messages that
    match, in the conversations the filters keep, newest first."""
    actor = request.actor
    tab = _tab(request)
    channel = request.GET.get("channel", "")
    tags = actor.read(conversation_selectors.tags, both_modes=True)
    tag = next((t for t in tags if str(t.pk) == request.GET.get("tag")), None)
    search = request.GET.get("q", "").strip()[:MAX_QUERY]
    filters = {"statuses": TABS[tab][1], "assignee": actor.user if tab == "mine" else None,
               "unassigned": tab == "unassigned",
               "channel": channel if channel in Channel.values else None, "tag": tag}
    tabs = {key: label for key, (label, _) in TABS.items()
            if key != "mine" or actor.user is not None}
    context = {
        "view": tab, "views": tabs, "view_label": TABS[tab][0],
        "channel": channel, "channels": Channel.choices,
        "tags": tags, "tag": tag, "search": search,
        # The tabs keep the other filters and the search; the pager keeps everything.
        "filters": query_without(request, "view", "page"),
        "query": query_without_page(request), "section": "conversations",
    }
    if search:
        found = actor.read(conversation_selectors.message_search, query=search,
                           page=_page_number(request), **filters)
        context["results"] = found
        base = reverse("dashboard:conversations")
        context["hits"] = [_hit(m, found.terms, base) for m in found.results]
    else:
        page = page_of(request, actor.read(conversation_selectors.conversation_queue,
                                           reader=actor.user, **filters))
        for row in page:
            # Messages since the person last had it open (all of them if they never did).
            row.unread = (max(0, row.message_count - (row.seen_count or 0))
                          if actor.user is not None else 0)
        context["page"] = page
    return render(request, "dashboard/conversations.html", context)


@dataclass(frozen=True)
class Hit:
    """A search result as the list shows it: computed here, so that the template's loop only
    prints (a page of results renders in a fraction of the time of resolving each lookup)."""

    url: str
    visitor: str
    status: str
    status_label: str
    tags: list[tuple[str, str]]
    at: datetime
    who: str
    pieces: list


STATUS_LABELS = dict(ConversationStatus.choices)


def _hit(found, terms: list[str], base: str) -> Hit:
    who = "Visitor" if found.role == "user" else (found.author_name or "Agent")
    return Hit(url=f"{base}{found.conversation_id}/#m-{found.id}",
               visitor=found.lead_label or "Anonymous visitor", status=found.status,
               status_label=STATUS_LABELS.get(found.status, found.status), tags=found.tags,
               at=found.created_at, who=who, pieces=excerpt(found.content, terms))


class ReplyForm(forms.Form):
    # Optional with a file: a reply may be a file alone (docs/dashboard.md, "Attachments").
    content = forms.CharField(label="Your reply", max_length=4000, required=False,
                              widget=forms.Textarea(attrs={"rows": 3}))
    file = forms.FileField(label="Attach a file", required=False, widget=forms.ClearableFileInput(
        attrs={"accept": ACCEPT_ATTRIBUTE}), help_text=f"{ACCEPTED}, up to "
                                                        f"{settings.ATTACHMENTS_MAX_BYTES // 2**20} MB.")


class AssignForm(forms.Form):
    user = forms.UUIDField()


def _conversation(request: HttpRequest, conversation_id: str):
    return request.actor.get(conversation_selectors.conversation_get, conversation_id=conversation_id)


@dashboard_view()
def conversation_detail(request: HttpRequest, conversation_id: str) -> HttpResponse:
    actor = request.actor
    conversation = _conversation(request, conversation_id)
    # The staff access audit (the Privacy page): this page shows the visitor's words and details.
    actor.write(record_staff_access, user=actor.user, action=StaffAccessAction.VIEWED,
                lead_id=conversation.lead_id, conversation_id=conversation.pk)
    transcript = actor.read(conversation_selectors.conversation_transcript,
                            conversation_id=conversation.pk, limit=TRANSCRIPT_CAP)
    files = conversation_selectors.message_attachments([m.pk for m in transcript])
    for m in transcript:
        m.files = files.get(m.pk, [])
    mine = (actor.user is not None and conversation.status == ConversationStatus.HANDED_OFF
            and conversation.assigned_to_id == actor.user.pk)
    if actor.user is not None:  # what they see now is read (docs/dashboard.md, "Inbox")
        conversation_services.conversation_mark_read(conversation=conversation, user=actor.user)
    team = actor.read(tenant_selectors.tenant_users, both_modes=True)
    handles = team_handles(team)
    tags = actor.read(conversation_selectors.tags, both_modes=True)
    on = {t.pk for t in conversation.tags.all()}
    now = timezone.now()
    return render(request, "dashboard/conversation_detail.html", {
        "conversation": conversation,
        "transcript": transcript,
        "truncated": conversation.message_count > len(transcript),
        "mine": mine,
        "reply_form": ReplyForm(),
        "staff": team if actor.can_manage else [],
        "handoff_context": (conversation.handoff or {}).get("context") or {},
        # The visitor's acceptance of the tenant's notice, its time as a time the page shows in
        # the reader's zone (docs/widget.md, "Consent").
        "consent": conversation.consent and {
            "version": conversation.consent["version"],
            "accepted_at": parse_timestamp(conversation.consent["acceptedAt"])},
        "visitor": visitor_of(conversation, now=now),
        "others": actor.read(conversation_selectors.visitor_conversations,
                             conversation=conversation),
        "conversation_tags": [t for t in tags if t.pk in on],
        "other_tags": [t for t in tags if t.pk not in on],
        "notes": note_rows(actor.read(conversation_selectors.conversation_notes,
                                      conversation_id=conversation.pk), handles),
        "handles": handles,
        "canned": canned_for(actor, conversation, now=now) if mine else [],
        "section": "conversations",
    })


@csrf_exempt  # checked below, once the file's reading is limited (Django's upload handlers)
@require_POST
def conversation_reply(request: HttpRequest, conversation_id: str) -> HttpResponse:
    limit_uploads(request)
    # Reads the body, the file within its limit: past it, the refusal is the page's message.
    if attempt(request, lambda: request.POST is not None) is None:
        return redirect("dashboard:conversation", conversation_id=conversation_id)
    return _conversation_reply(request, conversation_id)


@csrf_protect
@dashboard_view()
def _conversation_reply(request: HttpRequest, conversation_id: str) -> HttpResponse:
    form = ReplyForm(request.POST, request.FILES)
    valid = form.is_valid()
    conversation = _conversation(request, conversation_id)
    if request.actor.user is None:
        messages.error(request, "Replies are signed by a person: sign in with your staff account.")
    elif not valid or not (form.cleaned_data["content"].strip() or form.cleaned_data["file"]):
        messages.error(request, "Write a reply of 1 to 4,000 characters, or attach a file.")
    else:
        upload = form.cleaned_data["file"]
        attempt(request, lambda: conversation_services.conversation_reply_as_human(
            conversation=conversation, author=request.actor.user,
            content=form.cleaned_data["content"],
            attachment=read_upload(upload) if upload else None), "Reply sent.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


@dashboard_view()
def conversation_attachment(request: HttpRequest, conversation_id: str,
                            attachment_id: str) -> HttpResponse:
    """A file of the conversation, for the tenant's staff in the mode they are in: an image
    inline, anything else as a download (``conversations.attachments.file_response``)."""
    attachment = request.actor.read(conversation_selectors.attachment_get,
                                    conversation_id=conversation_id, attachment_id=attachment_id)
    if attachment is None:
        raise Http404()
    # A file is the visitor's data as the page is: a direct link is audited as the page is.
    request.actor.write(record_staff_access, user=request.actor.user,
                        action=StaffAccessAction.VIEWED, conversation_id=attachment.conversation_id)
    return file_response(attachment)


@require_POST
@dashboard_view()
def conversation_take_over(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    if request.actor.user is None:
        messages.error(request, "Only a person can take a conversation over: assign it instead.")
    else:
        attempt(request, lambda: conversation_services.conversation_take_over(
            conversation=conversation, user=request.actor.user),
            "You have the conversation: the agent stays silent until you hand it back.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


@require_POST
@dashboard_view(manage=True)
def conversation_assign(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    form = AssignForm(request.POST)
    user = (request.actor.read(tenant_selectors.tenant_user_get, both_modes=True,
                               user_id=form.cleaned_data["user"])
            if form.is_valid() else None)
    if user is None:
        messages.error(request, "Choose a member of your staff.")
    else:
        attempt(request, lambda: conversation_services.conversation_assign(
            conversation=conversation, user=user), f"Assigned to {user.display_name}.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


@require_POST
@dashboard_view()
def conversation_hand_back(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    attempt(request, lambda: conversation_services.conversation_hand_back(conversation=conversation),
            "Handed back: the agent answers the visitor again.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


@require_POST
@dashboard_view()
def conversation_close(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    attempt(request, lambda: conversation_services.conversation_close(
        conversation=conversation, reason="closed_by_staff"), "Conversation closed.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


def _stream_target(request: HttpRequest, conversation_id: str):
    """The id of the conversation to listen to, if the signed-in actor may see it."""
    actor = resolve_actor(request)
    if actor is None:
        return None
    conversation = actor.read(conversation_selectors.conversation_get,
                              conversation_id=conversation_id)
    return conversation.pk if conversation else None


async def conversation_events(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """Server-Sent Events of one conversation for its transcript page (the rep's side of the
    takeover): the visitor's messages and status changes as they happen."""
    target = await sync_to_async(_stream_target)(request, conversation_id)
    if target is None:
        raise Http404()

    async def frames():
        async for item in live.listen(target):
            yield b": keep-alive\n\n" if item is None else frame(*item)

    return event_stream_response(frames())
