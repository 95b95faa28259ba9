"""Tags and canned replies (docs/dashboard.md, "Inbox"): managers keep them on Settings → Inbox;
tags go on and off a conversation from its page and filter the list; a canned reply reaches the
reply box of the person who has the conversation, its placeholders filled from the lead, the
tenant and that person. Another tenant's are never seen nor usable."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import CannedReply, ConversationTag, Tag
from conversations.services import (
    canned_reply_create,
    conversation_delete,
    conversation_tag_add,
    conversation_take_over,
    tag_create,
)
from tenants.services import tenant_set_meetings, user_create
from tests.conversations.meeting_helpers import book
from tests.dashboard.client import signed_in
from tests.dashboard.html import errors_beside, page
from tests.factories import PASSWORD, make_lead
from tests.inbox_helpers import conversation_with


@pytest.fixture
def manager(kit):
    return user_create(tenant=kit.tenant, email="mia@acme.test", first_name="Mia",
                       last_name="Manager", role="manager", password=PASSWORD)


@pytest.fixture
def rep(kit, manager):
    return user_create(tenant=kit.tenant, email="ray@acme.test", first_name="Ray",
                       last_name="Rep", password=PASSWORD)


def test_managers_keep_the_tags(kit, stranger, manager, rep):
    client = signed_in(manager)
    r = client.post("/dashboard/settings/inbox/tags/", {"tag-name": " VIP ", "tag-colour": "#DC2626"})
    assert r.status_code == 302
    vip = Tag.objects.get()
    assert (vip.name, vip.colour, vip.tenant) == ("VIP", "#dc2626", kit.tenant)
    # One "VIP" whatever its case; a colour is #rrggbb or none.
    r = client.post("/dashboard/settings/inbox/tags/", {"tag-name": "vip", "tag-plain": "on"})
    assert r.status_code == 400 and errors_beside(r.content, "id_tag-name") == [
        "A tag has this name already."]
    r = client.post("/dashboard/settings/inbox/tags/", {"tag-name": "Hot", "tag-colour": "red"})
    assert r.status_code == 400 and "#rrggbb" in " ".join(errors_beside(r.content, "id_tag-colour"))
    client.post(f"/dashboard/settings/inbox/tags/{vip.pk}/", {f"tag-{vip.pk}-name": "Key account",
                                                              f"tag-{vip.pk}-plain": "on"})
    vip.refresh_from_db()
    assert (vip.name, vip.colour) == ("Key account", "")
    # Reps use tags but do not keep them; a stranger's manager cannot touch them.
    r = signed_in(rep).post("/dashboard/settings/inbox/tags/", {"tag-name": "Mine"}, follow=True)
    assert b"Only sales managers" in r.content
    theirs = signed_in(user_create(tenant=stranger.tenant, email="sam@stranger.test",
                                   role="manager", password=PASSWORD))
    assert "Key account" not in theirs.get("/dashboard/settings/inbox/").content.decode()
    assert theirs.post(f"/dashboard/settings/inbox/tags/{vip.pk}/delete/").status_code == 404
    client.post(f"/dashboard/settings/inbox/tags/{vip.pk}/delete/")
    assert not Tag.objects.exists()


def test_tags_go_on_and_off_a_conversation_and_filter_the_list(kit, stranger, rep):
    vip = tag_create(tenant=kit.tenant, name="VIP", colour="#dc2626")
    hot = tag_create(tenant=kit.tenant, name="Hot")
    theirs = tag_create(tenant=stranger.tenant, name="Theirs")
    tagged = conversation_with(kit, ("user", "hi"), visitor="v1")
    other = conversation_with(kit, ("user", "hello"), visitor="v2")
    client = signed_in(rep)
    url = f"/dashboard/conversations/{tagged.pk}/"
    assert client.post(url + "tags/", {"tag": vip.pk}).status_code == 302
    client.post(url + "tags/", {"tag": hot.pk})
    r = client.post(url + "tags/", {"tag": theirs.pk}, follow=True)
    assert b"Choose one of your tags" in r.content
    link = ConversationTag.objects.get(conversation=tagged, tag=vip)
    assert (link.tenant, link.livemode, link.added_by) == (kit.tenant, True, rep)
    shown = page(client.get(url).content)
    assert shown.xpath("//section[@id='tags']//span[contains(@class,'tag')]/text()") == ["Hot", "VIP"]
    assert shown.xpath("//select[@id='tag-add']/option") == []  # every tag is on it

    listing = client.get(f"/dashboard/conversations/?view=all&tag={vip.pk}").content.decode()
    assert str(tagged.pk) in listing and str(other.pk) not in listing
    assert 'style="--tag:#dc2626"' in listing
    client.post(url + f"tags/{vip.pk}/remove/")
    listing = client.get(f"/dashboard/conversations/?view=all&tag={vip.pk}").content.decode()
    assert str(tagged.pk) not in listing and "has the tag “VIP”" in listing
    assert client.post(url + f"tags/{theirs.pk}/remove/").status_code == 404
    # A tag on a conversation goes with it.
    conversation_delete(conversation=tagged)
    assert not ConversationTag.objects.exists() and Tag.objects.filter(tenant=kit.tenant).count() == 2


def test_the_list_shows_tags_and_unread_in_a_fixed_number_of_queries(kit, rep):
    vip = tag_create(tenant=kit.tenant, name="VIP")
    client = signed_in(rep)

    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            client.get("/dashboard/conversations/?view=all")
        return len(captured.captured_queries)

    conversation_tag_add(conversation=conversation_with(kit, ("user", "a"), visitor="a"), tag=vip,
                         user=rep)
    few = count()
    for n in range(5):
        conversation_tag_add(conversation=conversation_with(kit, ("user", "b"), visitor=f"b{n}"),
                             tag=vip, user=rep)
    assert count() == few


def test_managers_keep_the_canned_replies(kit, manager):
    client = signed_in(manager)
    r = client.post("/dashboard/settings/inbox/replies/", {
        "reply-shortcut": "/Pricing", "reply-content": "Hi {first_name}, here: {meeting_link}"})
    assert r.status_code == 302
    reply = CannedReply.objects.get()
    assert (reply.shortcut, reply.content) == ("pricing", "Hi {first_name}, here: {meeting_link}")
    r = client.post("/dashboard/settings/inbox/replies/", {
        "reply-shortcut": "pricing", "reply-content": "Again"})
    assert r.status_code == 400 and errors_beside(r.content, "id_reply-shortcut") == [
        "Another canned reply has this shortcut."]
    r = client.post("/dashboard/settings/inbox/replies/", {
        "reply-shortcut": "intro", "reply-content": "Hi {firstname}, I am {agent_name}"})
    assert r.status_code == 400
    assert ("Unknown placeholder {firstname}: the placeholders are {first_name}, {meeting_link}, "
            "{agent_name}.") in errors_beside(r.content, "id_reply-content")
    assert "Hi {firstname}" in r.content.decode()  # what was typed comes back
    r = client.post("/dashboard/settings/inbox/replies/", {
        "reply-shortcut": "two words", "reply-content": "x"})
    assert r.status_code == 400 and "lowercase letters" in " ".join(
        errors_beside(r.content, "id_reply-shortcut"))
    client.post(f"/dashboard/settings/inbox/replies/{reply.pk}/", {
        f"reply-{reply.pk}-shortcut": "price", f"reply-{reply.pk}-content": "Our prices: …"})
    reply.refresh_from_db()
    assert (reply.shortcut, reply.content) == ("price", "Our prices: …")
    client.post(f"/dashboard/settings/inbox/replies/{reply.pk}/delete/")
    assert not CannedReply.objects.exists()


def _offered(response) -> dict[str, str]:
    items = page(response.content).xpath("//ul[@data-suggestions='/']/li")
    return {li.get("data-key"): li.text_content() for li in items}


def test_a_canned_reply_is_filled_for_the_conversation_and_the_person(kit, stranger, rep):
    canned_reply_create(tenant=kit.tenant, shortcut="intro",
                        content="Hi {first_name}, I'm {agent_name}. Book here: {meeting_link}")
    canned_reply_create(tenant=stranger.tenant, shortcut="theirs", content="Not yours")
    lead = make_lead(kit, email="ann@hooli.test", name="Ann Lee")
    conversation = conversation_with(kit, ("user", "a person please"), lead=lead,
                                     status="handed_off", assigned_to=rep)
    client = signed_in(rep)
    url = f"/dashboard/conversations/{conversation.pk}/"
    # Without a booking link or a meeting, {meeting_link} stays for the person to fill.
    assert _offered(client.get(url)) == {
        "intro": "Hi Ann, I'm Ray. Book here: {meeting_link}"}
    tenant_set_meetings(tenant=kit.tenant, timezone_name="UTC", days=[0, 1, 2, 3, 4], start_hour=9,
                        end_hour=17, minutes=30, booking_url="https://cal.example/acme")
    assert _offered(client.get(url)) == {
        "intro": "Hi Ann, I'm Ray. Book here: https://cal.example/acme"}
    # Only in the reply box of the person who has the conversation.
    other = user_create(tenant=kit.tenant, email="otto@acme.test", password=PASSWORD)
    assert _offered(signed_in(other).get(url)) == {}


def test_meeting_link_falls_back_to_the_leads_next_meeting(api, kit, rep):
    canned_reply_create(tenant=kit.tenant, shortcut="meet",
                        content="{first_name}, your meeting: {meeting_link}")
    meeting, _ = book(api, kit, name="Sam Lee")
    conversation_take_over(conversation=meeting.conversation, user=rep)
    text = _offered(signed_in(rep).get(f"/dashboard/conversations/{meeting.conversation_id}/"))
    assert re.fullmatch(r"Sam, your meeting: https?://\S+/meetings/[^/\s]+/", text["meet"])
    assert str(meeting.pk) not in text["meet"]  # a signed link, not the id
