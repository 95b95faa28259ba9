"""The inbox's tools (docs/dashboard.md, "Inbox"): tags on a conversation, internal notes on a
conversation or a lead with @mentions, the rep's typing and read markers, and the page where
managers keep the tenant's canned replies and tags (Settings → Inbox)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from conversations import canned, links, live
from conversations import selectors as conversation_selectors
from conversations import services as conversation_services
from conversations.models import ConversationStatus
from conversations.services.notes import MAX_NOTE, MENTION, mention_handle
from core.errors import ServiceError
from leads import selectors as lead_selectors

from ..auth import Actor, dashboard_view
from .common import attempt, mark_invalid, refuse_on_form, safe_next

# --- what the conversation and lead pages show ----------------------------------------------


@dataclass(frozen=True)
class Handle:
    handle: str
    name: str


def team_handles(team) -> list[Handle]:
    """Who a note may mention, as the autocomplete offers them: ``@handle`` and name."""
    return [Handle(mention_handle(user), user.display_name) for user in team]


@dataclass(frozen=True)
class NotePiece:
    text: str
    mention: bool


def note_pieces(text: str, handles: set[str]) -> list[NotePiece]:
    """The note's text, with each ``@handle`` of a teammate apart (the page marks them)."""
    pieces, at = [], 0
    for match in MENTION.finditer(text):
        handle = match.group(1).rstrip(".+-")
        if handle.lower() not in handles:
            continue
        end = match.start(1) + len(handle)
        if match.start() > at:
            pieces.append(NotePiece(text[at:match.start()], False))
        pieces.append(NotePiece(text[match.start():end], True))
        at = end
    if at < len(text):
        pieces.append(NotePiece(text[at:], False))
    return pieces


def note_rows(notes, handles: list[Handle]) -> list[tuple[Any, list[NotePiece]]]:
    known = {h.handle for h in handles}
    return [(note, note_pieces(note.content, known)) for note in notes]


def canned_for(actor: Actor, conversation, *, now: datetime) -> list[dict[str, str]]:
    """The tenant's canned replies filled for this conversation and this person
    (``conversations.canned``): what "/" offers in the reply box."""
    replies = actor.read(conversation_selectors.canned_replies, both_modes=True)
    if not replies:
        return []
    lead = conversation.lead
    link = actor.tenant.booking_url
    if not link and lead is not None and any("{meeting_link}" in r.content for r in replies):
        meeting = actor.read(conversation_selectors.lead_next_meeting, lead_id=lead.pk, after=now)
        link = links.link_url(meeting.pk, "reschedule") if meeting else ""
    user = actor.user
    values = {
        "first_name": canned.first_word(lead.name if lead else None)
        or canned.first_word((conversation.contact or {}).get("name")),
        "meeting_link": link,
        "agent_name": (user.first_name or user.display_name) if user else "",
    }
    return [{"shortcut": r.shortcut, "text": canned.fill(r.content, values)} for r in replies]


# --- tags on a conversation -----------------------------------------------------------------


def _conversation(request: HttpRequest, conversation_id: str):
    return request.actor.get(conversation_selectors.conversation_get,
                             conversation_id=conversation_id)


def _back(conversation) -> HttpResponse:
    return redirect("dashboard:conversation", conversation_id=conversation.pk)


def _uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


@require_POST
@dashboard_view()
def conversation_tag_add(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    tag_id = _uuid(request.POST.get("tag"))
    tag = tag_id and request.actor.read(conversation_selectors.tag_get, both_modes=True,
                                        tag_id=tag_id)
    if not tag:
        messages.error(request, "Choose one of your tags.")
    else:
        attempt(request, lambda: conversation_services.conversation_tag_add(
            conversation=conversation, tag=tag, user=request.actor.user), f"Tagged “{tag.name}”.")
    return _back(conversation)


@require_POST
@dashboard_view()
def conversation_tag_remove(request: HttpRequest, conversation_id: str,
                            tag_id: uuid.UUID) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    tag = request.actor.get(conversation_selectors.tag_get, both_modes=True, tag_id=tag_id)
    attempt(request, lambda: conversation_services.conversation_tag_remove(
        conversation=conversation, tag=tag), f"“{tag.name}” removed.")
    return _back(conversation)


# --- notes ----------------------------------------------------------------------------------


class NoteForm(forms.Form):
    content = forms.CharField(label="Internal note", max_length=MAX_NOTE,
                              widget=forms.Textarea(attrs={"rows": 2}))


def _note(request: HttpRequest, back: str, **subject: Any) -> HttpResponse:
    """Writes the note of the form on ``subject`` (a conversation or a lead) and goes back."""
    form = NoteForm(request.POST)
    if request.actor.user is None:
        messages.error(request, "Notes are signed by a person: sign in with your staff account.")
    elif not form.is_valid():
        messages.error(request, f"Write a note of 1 to {MAX_NOTE:,} characters.")
    else:
        note = attempt(request, lambda: request.actor.write(
            conversation_services.note_create, author=request.actor.user,
            content=form.cleaned_data["content"], **subject))
        if note is not None:
            told = len(note.mentions)
            messages.success(request, "Note added" + (
                f": {told} teammate{'s' if told != 1 else ''} told." if told else "."))
            return redirect(f"{back}#note-{note.pk}")
    return redirect(back)


@require_POST
@dashboard_view()
def conversation_note_add(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    return _note(request, reverse("dashboard:conversation", args=[conversation.pk]),
                 conversation=conversation)


@require_POST
@dashboard_view()
def lead_note_add(request: HttpRequest, lead_id: str) -> HttpResponse:
    lead = request.actor.get(lead_selectors.lead_get, lead_id=lead_id)
    return _note(request, reverse("dashboard:lead", args=[lead.pk]), lead=lead)


@require_POST
@dashboard_view()
def note_delete(request: HttpRequest, note_id: str) -> HttpResponse:
    note = request.actor.get(conversation_selectors.note_get, note_id=note_id)
    fallback = (reverse("dashboard:conversation", args=[note.conversation_id])
                if note.conversation_id else reverse("dashboard:lead", args=[note.lead_id]))
    attempt(request, lambda: conversation_services.note_delete(note=note, by=request.actor.user),
            "Note deleted.")
    return redirect(safe_next(request, fallback))


# --- typing and reading, from the conversation's page (static/dashboard/transcript.js) ------


@require_POST
@dashboard_view()
def conversation_typing(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """The person who has the conversation is typing a reply: the visitor's widget shows it.
    204 whatever happens: the page sends it again while the person types."""
    conversation = _conversation(request, conversation_id)
    user = request.actor.user
    if (user is not None and conversation.status == ConversationStatus.HANDED_OFF
            and conversation.assigned_to_id == user.pk):
        live.typing(conversation.pk, role="assistant", name=user.first_name or user.display_name)
    return HttpResponse(status=204)


@require_POST
@dashboard_view()
def conversation_read(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """The open page showed messages that arrived live: read up to ``seen`` messages. 204."""
    conversation = _conversation(request, conversation_id)
    try:
        seen = int(request.POST.get("seen", ""))
    except ValueError:
        return HttpResponse(status=400)
    if request.actor.user is not None:
        conversation_services.conversation_mark_read(conversation=conversation,
                                                     user=request.actor.user, seen_count=seen)
    return HttpResponse(status=204)


# --- Settings → Inbox: canned replies and tags (managers) -----------------------------------


class CannedReplyForm(forms.Form):
    shortcut = forms.CharField(max_length=31, label="Shortcut",
                               help_text="Typed after / in the reply box: lowercase letters, "
                                         "digits, - and _.")
    content = forms.CharField(max_length=4000, label="Reply", widget=forms.Textarea(
        attrs={"rows": 3}), help_text="Placeholders: {first_name} (the lead's), {meeting_link} "
                                      "(your booking link, else the lead's next meeting), "
                                      "{agent_name} (yours).")


class TagForm(forms.Form):
    name = forms.CharField(max_length=40, label="Name")
    colour = forms.CharField(max_length=7, required=False, label="Colour",
                             widget=forms.TextInput(attrs={"type": "color"}))
    plain = forms.BooleanField(required=False, label="No colour")


def _inbox(request: HttpRequest, *, status: int = 200, **forms_given: Any) -> HttpResponse:
    actor = request.actor
    context = {
        "section": "settings",
        "replies": actor.read(conversation_selectors.canned_replies, both_modes=True),
        "tags": actor.read(conversation_selectors.tags, both_modes=True),
        "reply_form": CannedReplyForm(prefix="reply"),
        "tag_form": TagForm(prefix="tag", initial={"colour": "#2563eb"}),
        "placeholders": [f"{{{p}}}" for p in canned.PLACEHOLDERS],
    }
    context.update({name: mark_invalid(form) for name, form in forms_given.items()})
    return render(request, "dashboard/inbox_settings.html", context, status=status)


@dashboard_view(manage=True)
def inbox_settings(request: HttpRequest) -> HttpResponse:
    return _inbox(request)


def _saved(request: HttpRequest, form: forms.Form, action, success: str, key: str,
           fields: dict[str, str] | None = None) -> HttpResponse:
    """Runs the service with a valid form; a refusal shows the page again (400) with the form
    and the reasons beside its fields."""
    if form.is_valid():
        try:
            action(form.cleaned_data)
        except ServiceError as exc:
            refuse_on_form(form, exc, fields)
        else:
            messages.success(request, success)
            return redirect("dashboard:inbox-settings")
    return _inbox(request, status=400, **{key: form})


@require_POST
@dashboard_view(manage=True)
def canned_reply_create(request: HttpRequest) -> HttpResponse:
    form = CannedReplyForm(request.POST, prefix="reply")
    return _saved(request, form, lambda data: request.actor.write(
        conversation_services.canned_reply_create, both_modes=True, **data),
        "Canned reply saved.", "reply_form")


@require_POST
@dashboard_view(manage=True)
def canned_reply_update(request: HttpRequest, reply_id: uuid.UUID) -> HttpResponse:
    reply = request.actor.get(conversation_selectors.canned_reply_get, both_modes=True,
                              reply_id=reply_id)
    form = CannedReplyForm(request.POST, prefix=f"reply-{reply.pk}")
    if not form.is_valid():
        messages.error(request, f"/{reply.shortcut} was not saved: "
                                + "; ".join(e for errors in form.errors.values() for e in errors))
        return redirect("dashboard:inbox-settings")
    attempt(request, lambda: conversation_services.canned_reply_update(
        reply=reply, **form.cleaned_data), "Canned reply saved.")
    return redirect("dashboard:inbox-settings")


@require_POST
@dashboard_view(manage=True)
def canned_reply_delete(request: HttpRequest, reply_id: uuid.UUID) -> HttpResponse:
    reply = request.actor.get(conversation_selectors.canned_reply_get, both_modes=True,
                              reply_id=reply_id)
    attempt(request, lambda: conversation_services.canned_reply_delete(reply=reply),
            f"/{reply.shortcut} deleted.")
    return redirect("dashboard:inbox-settings")


def _colour(data: dict[str, Any]) -> str:
    return "" if data.get("plain") else data.get("colour") or ""


@require_POST
@dashboard_view(manage=True)
def tag_create(request: HttpRequest) -> HttpResponse:
    form = TagForm(request.POST, prefix="tag")
    return _saved(request, form, lambda data: request.actor.write(
        conversation_services.tag_create, both_modes=True, name=data["name"],
        colour=_colour(data)), "Tag saved.", "tag_form")


@require_POST
@dashboard_view(manage=True)
def tag_update(request: HttpRequest, tag_id: uuid.UUID) -> HttpResponse:
    tag = request.actor.get(conversation_selectors.tag_get, both_modes=True, tag_id=tag_id)
    form = TagForm(request.POST, prefix=f"tag-{tag.pk}")
    if not form.is_valid():
        messages.error(request, f"“{tag.name}” was not saved: give it a name of 1 to 40 "
                                "characters.")
        return redirect("dashboard:inbox-settings")
    attempt(request, lambda: conversation_services.tag_update(
        tag=tag, name=form.cleaned_data["name"], colour=_colour(form.cleaned_data)), "Tag saved.")
    return redirect("dashboard:inbox-settings")


@require_POST
@dashboard_view(manage=True)
def tag_delete(request: HttpRequest, tag_id: uuid.UUID) -> HttpResponse:
    tag = request.actor.get(conversation_selectors.tag_get, both_modes=True, tag_id=tag_id)
    attempt(request, lambda: conversation_services.tag_delete(tag=tag),
            f"“{tag.name}” deleted: no conversation has it any more.")
    return redirect("dashboard:inbox-settings")
