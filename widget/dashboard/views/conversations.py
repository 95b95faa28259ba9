"""Conversations: transcripts, the handoffs assigned to me, and the human takeover (reply, hand
back to the agent, close), with the transcript kept live by the conversation's event stream."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from conversations import live
from conversations.api.sse import event_stream_response, frame
from conversations.models import Channel, Conversation, ConversationStatus
from conversations.services import (
    conversation_assign,
    conversation_close,
    conversation_hand_back,
    conversation_reply_as_human,
)
from tenants.selectors import tenant_users

from ..auth import dashboard_view, resolve_actor
from .common import attempt, get_scoped_or_404, page_of, query_without_page

TRANSCRIPT_CAP = 500
VIEWS = {
    "mine": "Assigned to me",
    "handed_off": "All handoffs",
    "active": "Active",
    "ended": "Ended",
    "all": "All",
}


@dashboard_view()
def conversation_index(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    view = request.GET.get("view") or ("mine" if actor.user else "handed_off")
    if view not in VIEWS or (view == "mine" and actor.user is None):
        view = "all"
    qs = Conversation.objects.filter(**actor.scope).select_related("lead", "assigned_to")
    if view == "mine":
        qs = qs.filter(status=ConversationStatus.HANDED_OFF, assigned_to=actor.user)
    elif view == "handed_off":
        qs = qs.filter(status=ConversationStatus.HANDED_OFF)
    elif view == "active":
        qs = qs.filter(status=ConversationStatus.ACTIVE)
    elif view == "ended":
        qs = qs.filter(status__in=[ConversationStatus.CLOSED, ConversationStatus.EXPIRED])
    channel = request.GET.get("channel", "")
    if channel in Channel.values:
        qs = qs.filter(channel=channel)
    views = {k: v for k, v in VIEWS.items() if k != "mine" or actor.user is not None}
    return render(request, "dashboard/conversations.html", {
        "page": page_of(request, qs.order_by("-last_message_at", "-id")),
        "view": view, "views": views, "channel": channel, "channels": Channel.choices,
        "query": query_without_page(request), "section": "conversations",
    })


class ReplyForm(forms.Form):
    content = forms.CharField(label="Your reply", max_length=4000,
                              widget=forms.Textarea(attrs={"rows": 3}))


class AssignForm(forms.Form):
    user = forms.UUIDField()


def _conversation(request: HttpRequest, conversation_id: str) -> Conversation:
    qs = Conversation.objects.filter(**request.actor.scope).select_related("lead", "assigned_to")
    return get_scoped_or_404(qs, conversation_id)


@dashboard_view()
def conversation_detail(request: HttpRequest, conversation_id: str) -> HttpResponse:
    actor = request.actor
    conversation = _conversation(request, conversation_id)
    transcript = list(conversation.messages.select_related("author")
                      .order_by("-sequence")[:TRANSCRIPT_CAP])[::-1]
    mine = (actor.user is not None and conversation.status == ConversationStatus.HANDED_OFF
            and conversation.assigned_to_id == actor.user.pk)
    return render(request, "dashboard/conversation_detail.html", {
        "conversation": conversation,
        "transcript": transcript,
        "truncated": conversation.message_count > len(transcript),
        "mine": mine,
        "reply_form": ReplyForm(),
        "staff": tenant_users(tenant=actor.tenant) if actor.can_manage else [],
        "handoff_context": (conversation.handoff or {}).get("context") or {},
        "section": "conversations",
    })


@require_POST
@dashboard_view()
def conversation_reply(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    form = ReplyForm(request.POST)
    if request.actor.user is None:
        messages.error(request, "Replies are signed by a person: sign in with your staff account.")
    elif not form.is_valid():
        messages.error(request, "Write a reply of 1 to 4,000 characters.")
    else:
        attempt(request, lambda: conversation_reply_as_human(
            conversation=conversation, author=request.actor.user,
            content=form.cleaned_data["content"]), "Reply sent.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


@require_POST
@dashboard_view()
def conversation_take_over(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    if request.actor.user is None:
        messages.error(request, "Only a person can take a conversation over: assign it instead.")
    else:
        attempt(request, lambda: conversation_assign(conversation=conversation,
                                                     user=request.actor.user),
                "You have the conversation: the agent stays silent until you hand it back.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


@require_POST
@dashboard_view(manage=True)
def conversation_assign_to(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    form = AssignForm(request.POST)
    user = (tenant_users(tenant=request.actor.tenant).filter(pk=form.cleaned_data["user"]).first()
            if form.is_valid() else None)
    if user is None:
        messages.error(request, "Choose a member of your staff.")
    else:
        attempt(request, lambda: conversation_assign(conversation=conversation, user=user),
                f"Assigned to {user.display_name}.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


@require_POST
@dashboard_view()
def conversation_give_back(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    attempt(request, lambda: conversation_hand_back(conversation=conversation),
            "Handed back: the agent answers the visitor again.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


@require_POST
@dashboard_view()
def conversation_end(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    attempt(request, lambda: conversation_close(conversation=conversation, reason="closed_by_staff"),
            "Conversation closed.")
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


def _stream_target(request: HttpRequest, conversation_id: str):
    actor = resolve_actor(request)
    if actor is None:
        return None
    return (Conversation.objects.filter(**actor.scope, pk=conversation_id)
            .values_list("pk", flat=True).first())


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
