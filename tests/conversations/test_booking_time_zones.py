"""Booking in the visitor's time zone, through /api/v1/chat and the widget's /api/chat
(docs/conversations.md, "Time zone" and "Booking a slot"): the slots are offered and confirmed
in the zone of the chat's ``metadata.timezone``, named; the meeting is stored in UTC; a slot is
taken by the ``metadata`` of its suggested action, the old "Book <token>" text still books, and
the transcript keeps the visitor's words. The agent promises an email only when one is on its
way to the visitor's mailbox (docs/meetings.md, "What the agent promises")."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from conversations.models import EmailKind, Meeting, OutboundEmail
from core.languages import SPOKEN
from tests.chat_helpers import chat, take

from .meeting_helpers import links_in, path_of

SAM = "Hi, I'm Sam, sam@umbrella.io"


def _start(token: str) -> datetime:
    return datetime.strptime(token, "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC)


def _label(token: str, zone: str, name: str) -> str:
    """An English label as the visitor should read it: "Tue 24 Nov, 10:00 (Paris)"."""
    local = _start(token).astimezone(ZoneInfo(zone))
    return f"{local:%a} {local.day} {local:%b}, {local:%H:%M} ({name})"


def _offer(api, kit, *, metadata=None, visitor="visitor-1", **extra):
    """Sam gives their email (with ``metadata``), then asks for a demo in a turn without it."""
    sid = chat(api, kit, SAM, visitor=visitor, metadata=metadata or {}, **extra).json()["sessionId"]
    r = chat(api, kit, "Can we book a demo?", session=sid, visitor=visitor, **extra)
    assert r.status_code == 200, r.text
    return sid, [a for a in r.json()["suggestedActions"] if a["type"] == "reply"]


def _session(api, kit, sid):
    return api.get(f"/api/v1/chat/sessions/{sid}", headers=kit.auth("read")).json()


def _conversation(api, kit, sid):
    return api.get(f"/api/v1/conversations/conv_{sid[5:]}", headers=kit.auth("read")).json()


@pytest.mark.parametrize("zone, name", [("Europe/Paris", "Paris"),
                                        ("America/Los_Angeles", "Los Angeles")])
def test_slots_are_offered_and_confirmed_in_the_visitors_zone(api, kit, zone, name):
    sid, slots = _offer(api, kit, metadata={"timezone": zone})
    assert len(slots) == 3
    for action in slots:
        label = _label(action["metadata"]["slot"], zone, name)
        assert action == {"type": "reply", "label": label, "message": f"{label} works for me",
                          "metadata": {"slot": action["metadata"]["slot"]}}

    r = take(api, kit, slots[0], session=sid)
    assert r.status_code == 200, r.text
    assert r.json()["intent"] == "booking"
    assert r.json()["content"] == (f"You're booked for {slots[0]['label']}. You'll receive a "
                                   "confirmation by email.")
    # Stored in UTC, at the instant offered.
    assert Meeting.objects.get().starts_at == _start(slots[0]["metadata"]["slot"])
    # The transcript (and a reload of the widget) shows what the visitor said, not a token.
    said = [m["content"] for m in _session(api, kit, sid)["messages"] if m["role"] == "user"]
    assert said[-1] == f"{slots[0]['label']} works for me"
    assert not any("Book" in text or re.search(r"\dZ\b", text) for text in said)
    # The zone is the conversation's: kept in its metadata; the slot is not.
    metadata = _conversation(api, kit, sid)["metadata"]
    assert metadata["timezone"] == zone and "slot" not in metadata


def test_a_later_turn_keeps_the_zone_and_a_new_valid_one_replaces_it(api, kit):
    sid, slots = _offer(api, kit, metadata={"timezone": "Asia/Tokyo"})
    assert all(a["label"].endswith("(Tokyo)") for a in slots)
    r = chat(api, kit, "Any other time?", session=sid, metadata={"timezone": "Mars/Olympus"})
    r = chat(api, kit, "Can we book a demo?", session=sid,
             metadata={"timezone": "America/New_York"})
    labels = [a["label"] for a in r.json()["suggestedActions"] if a["type"] == "reply"]
    assert labels and all(label.endswith("(New York)") for label in labels)
    assert _conversation(api, kit, sid)["metadata"]["timezone"] == "America/New_York"


# A NUL is refused before any endpoint reads the body (config/api/input.py: a 400 naming
# metadata.timezone, tests/config/test_hostile_input.py), so it is not among these.
@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "../../etc/passwd",
                                  "", "europe/paris", "Europe/Paris/", "A" * 300, 42,
                                  {"name": "Europe/Paris"}, None])
def test_an_unknown_zone_is_ignored_and_the_tenants_zone_is_shown(api, kit, zone):
    kit.tenant.meeting_timezone = "Europe/Berlin"
    kit.tenant.save()
    sid, slots = _offer(api, kit, metadata={"timezone": zone})
    assert len(slots) == 3
    for action in slots:
        assert action["label"] == _label(action["metadata"]["slot"], "Europe/Berlin", "Berlin")
    assert "timezone" not in _conversation(api, kit, sid)["metadata"]


def test_without_any_zone_utc_is_named(api, kit):
    _sid, slots = _offer(api, kit)
    assert all(a["label"] == _label(a["metadata"]["slot"], "UTC", "UTC") for a in slots)


def test_the_slot_in_metadata_decides_not_the_words(api, kit):
    sid, slots = _offer(api, kit, metadata={"timezone": "Europe/Paris"})
    # The words name another slot; the structured choice wins.
    r = chat(api, kit, f"Book {slots[0]['metadata']['slot']}", session=sid,
             metadata={"slot": slots[2]["metadata"]["slot"]})
    assert r.status_code == 200, r.text
    assert Meeting.objects.get().starts_at == _start(slots[2]["metadata"]["slot"])
    assert slots[2]["label"] in r.json()["content"]


def test_any_words_with_a_slot_book_it(api, kit):
    sid, slots = _offer(api, kit)
    r = chat(api, kit, "ok", session=sid, metadata=slots[1]["metadata"])
    assert r.json()["intent"] == "booking"
    assert Meeting.objects.get().starts_at == _start(slots[1]["metadata"]["slot"])


def test_the_old_book_text_still_books_for_api_clients(api, kit):
    sid, slots = _offer(api, kit, metadata={"timezone": "Europe/Paris"})
    r = chat(api, kit, f"Book {slots[1]['metadata']['slot']}", session=sid)
    assert r.json()["intent"] == "booking"
    assert Meeting.objects.get().starts_at == _start(slots[1]["metadata"]["slot"])
    assert r.json()["content"].startswith(f"You're booked for {slots[1]['label']}.")


@pytest.mark.parametrize("language", ["en", "de"])
def test_the_message_of_an_offered_slot_sent_back_alone_books_that_slot(api, kit, language):
    """A REST client that follows the specification sends a ``reply`` action's ``message`` as
    the visitor's next message, without its metadata: that slot is booked."""
    sid, slots = _offer(api, kit, metadata={"timezone": "Europe/Paris"}, language=language)
    r = chat(api, kit, slots[1]["message"], session=sid)
    assert r.status_code == 200, r.text
    assert r.json()["intent"] == "booking"
    assert Meeting.objects.get().starts_at == _start(slots[1]["metadata"]["slot"])
    assert slots[1]["label"] in r.json()["content"]


def test_an_offered_slots_message_books_after_another_question_and_on_the_widgets_path(api, kit):
    url = f"/api/chat?tenant={kit.tenant.public_id}"
    sid = api.post(url, json={"message": SAM, "visitorId": "w"}).json()["sessionId"]
    offered = api.post(url, json={"message": "Book a demo", "visitorId": "w",
                                  "sessionId": sid}).json()["suggestedActions"]
    slot = [a for a in offered if a["type"] == "reply"][2]
    api.post(url, json={"message": "Do you integrate with Salesforce?", "visitorId": "w",
                        "sessionId": sid})
    r = api.post(url, json={"message": slot["message"], "visitorId": "w", "sessionId": sid})
    assert r.json()["events"][0]["type"] == "meeting.booked"
    assert Meeting.objects.get().starts_at == _start(slot["metadata"]["slot"])


def test_only_the_exact_message_of_a_slot_offered_in_this_session_books(api, kit):
    sid, slots = _offer(api, kit)
    for text in (slots[0]["message"].upper(), slots[0]["message"] + " I think",
                 slots[0]["label"]):
        chat(api, kit, text, session=sid)
    assert not Meeting.objects.exists()
    # Another session of the same visitor was offered nothing.
    other = chat(api, kit, SAM, visitor="v2").json()["sessionId"]
    chat(api, kit, slots[0]["message"], session=other, visitor="v2")
    assert not Meeting.objects.exists()
    chat(api, kit, f"  {slots[0]['message']} ", session=sid)  # spaces around are no words
    assert Meeting.objects.get().starts_at == _start(slots[0]["metadata"]["slot"])


@pytest.mark.parametrize("slot", ["tomorrow at ten", "2026-13-45T99:99Z", 7, ["x"]])
def test_a_slot_that_is_no_token_is_ignored(api, kit, slot):
    sid, _slots = _offer(api, kit)
    r = chat(api, kit, "sounds good", session=sid, metadata={"slot": slot})
    assert r.status_code == 200, r.text
    assert not Meeting.objects.exists()


def test_a_slot_taken_meanwhile_offers_others_in_the_visitors_zone(api, kit):
    sid, slots = _offer(api, kit, metadata={"timezone": "America/Los_Angeles"})
    other, _ = _offer(api, kit, visitor="v2")
    take(api, kit, slots[0], session=other, visitor="v2")
    r = take(api, kit, slots[0], session=sid)
    assert r.json()["content"] == "Sorry, that time is no longer available. Here are other times:"
    again = [a for a in r.json()["suggestedActions"] if a["type"] == "reply"]
    assert again and all(a["label"].endswith("(Los Angeles)") for a in again)
    assert slots[0]["metadata"] not in [a["metadata"] for a in again]


LANGUAGES = {
    "de": (r"(Mo|Di|Mi|Do|Fr)\. \d{1,2}\. \S+", "{} passt mir", "Ihr Termin ist gebucht: {}. Sie "
           "erhalten eine Bestätigung per E-Mail."),
    "fr": (r"(lun|mar|mer|jeu|ven)\. \d{1,2} \S+", "{} me convient", "C'est réservé pour {}. Vous "
           "recevrez une confirmation par e-mail."),
    "es": (r"(lun|mar|mié|jue|vie) \d{1,2} \S+", "{} me viene bien", "Reservado para {}. Recibirá "
           "una confirmación por correo electrónico."),
    "it": (r"(lun|mar|mer|gio|ven) \d{1,2} (gen|feb|mar|apr|mag|giu|lug|ago|set|ott|nov|dic)",
           "{} mi va bene", "Appuntamento fissato per {}. Riceverà una conferma via e-mail."),
    "pt": (r"(seg|ter|qua|qui|sex)\., \d{1,2} de (jan|fev|mar|abr|mai|jun|jul|ago|set|out|nov|dez)\.",
           "Pode ser {}", "Fica marcado para {}. Vai receber uma confirmação por e-mail."),
    "nl": (r"(ma|di|wo|do|vr) \d{1,2} (jan|feb|mrt|apr|mei|jun|jul|aug|sep|okt|nov|dec)",
           "{} komt mij goed uit", "Uw afspraak staat gepland op {}. U ontvangt een bevestiging per "
           "e-mail."),
}


@pytest.mark.parametrize("language", [code for code in SPOKEN if code != "en"])
def test_each_language_of_the_agent_names_the_day_and_zone(api, kit, language):
    date, choice, booked = LANGUAGES[language]
    sid, slots = _offer(api, kit, metadata={"timezone": "Europe/Paris"}, language=language)
    for action in slots:
        local = _start(action["metadata"]["slot"]).astimezone(ZoneInfo("Europe/Paris"))
        assert re.fullmatch(rf"{date}, {local:%H:%M} \(Paris\)", action["label"]), action
        assert str(local.day) in action["label"]
        assert action["message"] == choice.format(action["label"])
    r = take(api, kit, slots[0], session=sid, language=language)
    assert r.json()["content"] == booked.format(slots[0]["label"])


def test_the_widget_announces_the_booking_in_the_visitors_zone(api, kit):
    url = f"/api/chat?tenant={kit.tenant.public_id}"
    zone = {"timezone": "Europe/Paris"}
    sid = api.post(url, json={"message": SAM, "visitorId": "w", "metadata": zone}).json()["sessionId"]
    offered = api.post(url, json={"message": "Book a demo", "visitorId": "w", "sessionId": sid,
                                  "metadata": zone}).json()["suggestedActions"]
    slot = next(a for a in offered if a["type"] == "reply")
    assert slot["label"] == _label(slot["metadata"]["slot"], "Europe/Paris", "Paris")
    r = api.post(url, json={"message": slot["message"], "visitorId": "w", "sessionId": sid,
                            "metadata": {**zone, **slot["metadata"]}})
    meeting = r.json()["events"][0]["meeting"]
    assert meeting["label"] == slot["label"] and meeting["confirmationEmail"] is True
    assert meeting["startsAt"].startswith(slot["metadata"]["slot"][:-1])


def test_the_visitors_email_and_links_show_the_time_in_their_zone(api, kit):
    sid, slots = _offer(api, kit, metadata={"timezone": "America/Los_Angeles"})
    take(api, kit, slots[0], session=sid)
    label = slots[0]["label"]
    invitation = OutboundEmail.objects.get(kind=EmailKind.MEETING_INVITATION)
    assert invitation.subject.endswith(f"is booked: {label}")
    assert f"When: {label} (30 minutes)" in invitation.text_body
    page = api.get(path_of(links_in(invitation.text_body)["reschedule"]))
    assert page.status_code == 200 and label in page.text
    choices = re.findall(r'value="[^"]+"[^>]*> ([^<]+)</label>', page.text)
    assert choices and all(choice.endswith("(Los Angeles)") for choice in choices)


# --- what the agent promises -------------------------------------------------------------


def _book(api, kit):
    sid, slots = _offer(api, kit)
    return take(api, kit, slots[0], session=sid).json()


def test_a_delivering_transport_is_promised_the_invitation_it_will_send(api, kit):
    reply = _book(api, kit)  # the test transport (locmem) stands for a mailbox
    assert reply["content"].endswith("You'll receive a confirmation by email.")
    assert OutboundEmail.objects.filter(kind=EmailKind.MEETING_INVITATION).count() == 1


@pytest.mark.parametrize("backend", ["core.mail.EmlFileBackend",
                                     "django.core.mail.backends.console.EmailBackend"])
def test_a_transport_that_keeps_the_email_promises_nothing(api, kit, settings, tmp_path,
                                                           backend):
    # The embedded default writes emails to var/mail/, console:// prints them: the invitation
    # is queued (the dashboard lists it) but no visitor's mailbox will see it.
    settings.EMAIL_BACKEND, settings.EMAIL_FILE_PATH = backend, str(tmp_path)
    reply = _book(api, kit)
    token = Meeting.objects.get().starts_at.strftime("%Y-%m-%dT%H:%MZ")
    assert reply["content"] == f"You're booked for {_label(token, 'UTC', 'UTC')}."
    assert OutboundEmail.objects.filter(kind=EmailKind.MEETING_INVITATION).count() == 1


def test_email_off_queues_nothing_and_promises_nothing(api, kit, settings):
    settings.EMAIL_ENABLED = False
    reply = _book(api, kit)
    assert "email" not in reply["content"] and not OutboundEmail.objects.exists()
