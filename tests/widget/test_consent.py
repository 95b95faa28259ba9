"""Consent and Do Not Track on the widget's surface (docs/widget.md, "Consent", "Do Not Track"):
while the tenant requires consent, the public chat refuses a message without an acceptance of the
current notice and stores nothing of it; an accepted one is kept with the conversation (the
notice's version, words, link and the time), shown on v1's conversation detail and the
dashboard's conversation page. With Do Not Track honoured, a browser that sends ``DNT: 1`` or
``Sec-GPC: 1`` leaves no page metadata. (The widget itself: test_browser_consent.py.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import Conversation, Message
from core.models import Event
from core.timestamps import format_timestamp, parse_timestamp
from tenants.services import tenant_set_consent
from tests.chat_helpers import chat
from tests.dashboard.client import signed_in

NOTICE = "We keep this chat to answer you.\nBy chatting you accept our privacy policy."
POLICY = "https://acme.test/privacy"
ACCEPTED_AT = "2026-03-01T10:00:00.000Z"


def require(kit, text=NOTICE, link=POLICY):
    tenant_set_consent(tenant=kit.tenant, consent_required=True, consent_text=text,
                       consent_link=link)
    return kit.tenant.consent_version


def widget_chat(api, kit, message="Hi, what do you sell?", *, consent=None, session=None,
                visitor="v_1", headers=None, **body):
    payload = {"message": message, "visitorId": visitor, **body}
    if consent is not None:
        payload["consent"] = consent
    if session:
        payload["sessionId"] = session
    return api.post(f"/api/chat?tenant={kit.tenant.public_id}", json=payload, headers=headers)


def visitors(api, kit) -> int:
    """The analytics funnel's Visitors of today."""
    today = timezone.now().date().isoformat()
    r = api.get(f"/api/v1/analytics/funnel?startDate={today}&endDate={today}",
                headers=kit.auth("read"))
    return next(s["count"] for s in r.json()["stages"] if s["name"] == "Visitors")


def stored(kit) -> tuple[int, int, int]:
    """Conversations, messages and events of the tenant."""
    return (Conversation.objects.filter(tenant=kit.tenant).count(),
            Message.objects.filter(tenant=kit.tenant).count(),
            Event.objects.filter(tenant=kit.tenant).count())


def test_the_configuration_carries_the_notice_and_counts_accepting_loads_only(api, kit):
    version = require(kit)
    url = f"/api/widget?tenant={kit.tenant.public_id}&visitorId=v_1"
    r = api.get(url)
    assert r.status_code == 200
    assert r.json()["consent"] == {"version": version, "text": NOTICE, "link": POLICY}
    assert r.json()["honourDoNotTrack"] is False
    # A visitor who has not accepted is no visit yet; one who accepted this version is.
    assert visitors(api, kit) == 0
    api.get(url + f"&consent={version + 1}")
    assert visitors(api, kit) == 0
    api.get(url + f"&consent={version}")
    assert visitors(api, kit) == 1
    # Without a link, the link is null.
    tenant_set_consent(tenant=kit.tenant, consent_link="")
    assert api.get(url).json()["consent"] == {"version": version + 1, "text": NOTICE,
                                             "link": None}


@pytest.mark.parametrize("stream", [False, True])
def test_a_message_without_the_acceptance_is_refused_and_nothing_is_stored(api, kit, stream):
    version = require(kit)
    before = stored(kit)
    for consent in (None, {"version": version + 1, "acceptedAt": ACCEPTED_AT}):
        r = widget_chat(api, kit, consent=consent, stream=stream)
        assert r.status_code == 403, r.content
        assert r.headers["content-type"].startswith("application/json")
        assert r.json() == {"error": (
            f"The visitor has not accepted this chat's notice (version {version}): the widget "
            "shows it, and sends the acceptance, {version, acceptedAt}, with each message.")}
    assert stored(kit) == before == (0, 0, 0)
    # A malformed acceptance is a 400 naming it, and stores nothing either.
    r = widget_chat(api, kit, consent={"version": version, "acceptedAt": "yesterday"})
    assert r.status_code == 400 and r.json()["error"].startswith("consent.acceptedAt")
    assert stored(kit) == (0, 0, 0)


def test_the_acceptance_is_stored_with_the_conversation(api, kit, manager):
    version = require(kit)
    r = widget_chat(api, kit, consent={"version": version, "acceptedAt": ACCEPTED_AT})
    assert r.status_code == 200, r.content
    conversation = Conversation.objects.get(pk=r.json()["sessionId"])
    record = {"version": version, "text": NOTICE, "link": POLICY, "acceptedAt": ACCEPTED_AT}
    assert conversation.consent == record
    # v1's conversation detail shows it; the list does not.
    conv = f"conv_{conversation.pk.hex}"
    assert api.get(f"/api/v1/conversations/{conv}",
                   headers=kit.auth("read")).json()["consent"] == record
    listed = api.get("/api/v1/conversations", headers=kit.auth("read")).json()["data"]
    assert [c["id"] for c in listed] == [conv] and "consent" not in listed[0]
    # The dashboard's conversation page, in one line.
    page = signed_in(manager).get(f"/dashboard/conversations/{conversation.pk}/").content.decode()
    assert "<dt>Consent</dt><dd id=\"consent\">accepted version 1 at Mar 1, 2026 10:00</dd>" in page


def test_an_acceptance_from_the_future_is_stored_as_now(api, kit):
    version = require(kit)
    future = format_timestamp(timezone.now() + timedelta(days=2))
    r = widget_chat(api, kit, consent={"version": version, "acceptedAt": future})
    accepted = parse_timestamp(Conversation.objects.get(pk=r.json()["sessionId"])
                               .consent["acceptedAt"])
    assert abs(accepted - timezone.now()) < timedelta(minutes=1)


def test_a_newer_notice_must_be_accepted_in_the_same_conversation(api, kit):
    first = require(kit)
    session = widget_chat(api, kit, consent={"version": first, "acceptedAt": ACCEPTED_AT}
                          ).json()["sessionId"]
    widget_chat(api, kit, "And the price?", session=session,
                consent={"version": first, "acceptedAt": ACCEPTED_AT})
    conversation = Conversation.objects.get(pk=session)
    assert conversation.message_count == 4
    second = require(kit, text="Our new notice.")
    assert second == first + 1
    before = stored(kit)
    # The old acceptance no longer counts: refused, and the conversation is as it was.
    r = widget_chat(api, kit, "Still there?", session=session,
                    consent={"version": first, "acceptedAt": ACCEPTED_AT})
    assert r.status_code == 403
    assert stored(kit) == before
    conversation.refresh_from_db()
    assert conversation.message_count == 4 and conversation.consent["version"] == first
    # Accepted again: the same conversation, now holding the new acceptance.
    later = "2026-03-02T08:30:00.000Z"
    r = widget_chat(api, kit, "Still there?", session=session,
                    consent={"version": second, "acceptedAt": later})
    assert r.status_code == 200 and r.json()["sessionId"] == session
    conversation.refresh_from_db()
    assert conversation.consent == {"version": second, "text": "Our new notice.",
                                    "link": POLICY, "acceptedAt": later}
    # The same version sent again keeps the time it was first accepted.
    widget_chat(api, kit, "Thanks", session=session,
                consent={"version": second, "acceptedAt": "2026-03-03T00:00:00.000Z"})
    conversation.refresh_from_db()
    assert conversation.consent["acceptedAt"] == later


def test_no_consent_is_asked_when_none_is_required_nor_of_api_clients(api, kit):
    r = widget_chat(api, kit)
    assert r.status_code == 200
    assert Conversation.objects.get(pk=r.json()["sessionId"]).consent is None
    # An API client's visitors are its own to ask: v1's chat is not refused.
    require(kit)
    r = chat(api, kit, "Hello from our own app")
    assert r.status_code == 200, r.content
    conv = r.json()["sessionId"].replace("sess_", "conv_")
    assert api.get(f"/api/v1/conversations/{conv}",
                   headers=kit.auth("read")).json()["consent"] is None


# --- Do Not Track ----------------------------------------------------------------------------------

PAGE = {"landingPage": "https://acme.test/pricing?utm=mail", "referrer": "https://mail.test/",
        "campaign": "spring", "timezone": "Europe/Paris"}
BROWSER = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131",
           "Referer": "https://acme.test/pricing"}
NOTHING = {"userAgent": None, "referrer": None, "landingPage": None, "timezone": "Europe/Paris"}


def metadata_of(api, kit, headers, honour):
    tenant_set_consent(tenant=kit.tenant, honour_do_not_track=honour)
    r = widget_chat(api, kit, metadata=PAGE, headers={**BROWSER, **headers})
    assert r.status_code == 200, r.content
    conv = f"conv_{Conversation.objects.get(pk=r.json()['sessionId']).pk.hex}"
    return api.get(f"/api/v1/conversations/{conv}", headers=kit.auth("read")).json()["metadata"]


@pytest.mark.parametrize("signal", [{"DNT": "1"}, {"Sec-GPC": "1"}, {"DNT": "0", "Sec-GPC": "1"}])
def test_a_browser_that_asks_not_to_be_tracked_leaves_no_page_metadata(api, kit, signal):
    """Neither the headers nor the body's keys are kept; the time zone stays, as the times
    offered for a meeting are in it."""
    assert metadata_of(api, kit, signal, honour=True) == NOTHING
    conversation = Conversation.objects.get(tenant=kit.tenant)
    # Nor on the conversation's later messages.
    widget_chat(api, kit, "And the price?", session=str(conversation.pk), metadata=PAGE,
                headers={**BROWSER, **signal})
    conversation.refresh_from_db()
    assert conversation.metadata == NOTHING


@pytest.mark.parametrize(("signal", "honour"), [
    ({"DNT": "1"}, False),  # the tenant does not honour it
    ({"Sec-GPC": "1"}, False),
    ({}, True),  # honoured, but the browser does not ask
    ({"DNT": "0"}, True),
])
def test_otherwise_the_page_metadata_is_kept(api, kit, signal, honour):
    assert metadata_of(api, kit, signal, honour=honour) == {
        "userAgent": BROWSER["User-Agent"], "referrer": PAGE["referrer"],
        "landingPage": PAGE["landingPage"], "campaign": "spring", "timezone": "Europe/Paris"}
