"""``POST /api/chat/rating`` (docs/widget.md, "Rating", issue 29): the visitor's one-tap rating
of their conversation once it closed, with an optional comment; validated (the legacy
envelope), scoped to the tenant, the live mode and the visitor's own session, refused while the
tenant's widget does not ask or the conversation is open, a later rating replacing the earlier;
shown on the dashboard's conversation page, counted in analytics, exported and erased with the
conversation. The widget's side runs in Chromium in test_browser_rating.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from analytics.selectors import Period, analytics_satisfaction
from config.ratelimit import policy
from conversations.models import Conversation
from conversations.services import conversation_close
from privacy.services import conversation_erase
from tests.dashboard.client import signed_in
from tests.limits import preset, standing
from widget.services import widget_settings_update

VISITOR = "v_rater"


def ask_for_ratings(tenant, on=True):
    widget_settings_update(tenant=tenant, title="Chat with us", greeting="", position="bottom-right",
                           primary_color="#2563eb", text_color="#ffffff", rating_enabled=on)


def closed_chat(api, kit, visitor=VISITOR, close=True) -> str:
    r = api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                 json={"message": "Hello there", "visitorId": visitor})
    assert r.status_code == 200, r.text
    session = r.json()["sessionId"]
    if close:
        conversation_close(conversation=Conversation.objects.get(pk=session))
    return session


def rate(api, tenant, session, body, visitor=VISITOR):
    return api.post(f"/api/chat/rating?tenant={tenant.public_id}&sessionId={session}"
                    f"&visitorId={visitor}", json=body)


@pytest.fixture
def rated_kit(kit):
    ask_for_ratings(kit.tenant)
    return kit


def test_a_rating_is_stored_then_replaced_with_its_comment(api, rated_kit,
                                                           django_assert_max_num_queries):
    kit = rated_kit
    session = closed_chat(api, kit)
    with django_assert_max_num_queries(8):
        r = rate(api, kit.tenant, session, {"rating": "good"})
    assert r.status_code == 200, r.text
    assert r.json()["rating"] == "good" and r.json()["comment"] == ""
    assert r.json()["sessionId"] == session and r.json()["ratedAt"].endswith("Z")
    r = rate(api, kit.tenant, session, {"rating": "bad", "comment": "  Too slow to answer.  "})
    assert r.status_code == 200 and r.json()["comment"] == "Too slow to answer."
    c = Conversation.objects.get(pk=session)
    assert (c.rating, c.rating_comment) == ("bad", "Too slow to answer.")


@pytest.mark.parametrize("body, field", [
    ({}, "rating"), ({"rating": "meh"}, "rating"), ({"rating": 5}, "rating"),
    ({"rating": "good", "comment": "x" * 1001}, "comment"), ([], ""),
])
def test_bad_input_is_a_400_that_changes_nothing(api, rated_kit, body, field):
    session = closed_chat(api, rated_kit)
    r = rate(api, rated_kit.tenant, session, body)
    assert r.status_code == 400 and set(r.json()) == {"error"}
    assert r.json()["error"].startswith(field)
    assert Conversation.objects.get(pk=session).rated_at is None


def test_the_query_is_validated(api, rated_kit):
    session = closed_chat(api, rated_kit)
    r = api.post(f"/api/chat/rating?tenant={rated_kit.tenant.public_id}&sessionId={session}",
                 json={"rating": "good"})
    assert r.status_code == 400 and r.json()["error"].startswith("visitorId")
    r = api.post(f"/api/chat/rating?tenant={rated_kit.tenant.public_id}&sessionId=nope"
                 f"&visitorId={VISITOR}", json={"rating": "good"})
    assert r.status_code == 400 and r.json()["error"].startswith("sessionId")


def test_only_the_visitors_own_session_of_that_tenant_and_mode(api, rated_kit, stranger):
    session = closed_chat(api, rated_kit)
    ask_for_ratings(stranger.tenant)
    # Another visitor, another tenant's id, an unknown session: not found, nothing stored.
    assert rate(api, rated_kit.tenant, session, {"rating": "bad"}, visitor="v_other").status_code == 404
    r = rate(api, stranger.tenant, session, {"rating": "bad"})
    assert r.status_code == 404 and r.json() == {"error": "No such chat session for this visitor."}
    assert rate(api, rated_kit.tenant, "00000000-0000-0000-0000-000000000000",
                {"rating": "bad"}).status_code == 404
    # A test-mode conversation (the tenant's API in test mode) is not the widget's.
    r = api.post("/api/v1/chat", json={"message": "Hello", "visitorId": VISITOR},
                 headers=rated_kit.auth("write", "test"))
    test_session = Conversation.objects.get(livemode=False, tenant=rated_kit.tenant).pk
    assert r.status_code == 200
    conversation_close(conversation=Conversation.objects.get(pk=test_session))
    assert rate(api, rated_kit.tenant, test_session, {"rating": "good"}).status_code == 404
    assert not Conversation.objects.filter(rated_at__isnull=False).exists()


def test_refused_while_open_or_not_asked(api, kit):
    session = closed_chat(api, kit)
    r = rate(api, kit.tenant, session, {"rating": "good"})
    assert r.status_code == 409 and "does not ask" in r.json()["error"]
    ask_for_ratings(kit.tenant)
    open_session = closed_chat(api, kit, visitor="v_open", close=False)
    r = rate(api, kit.tenant, open_session, {"rating": "good"}, visitor="v_open")
    assert r.status_code == 409 and "has not ended" in r.json()["error"]
    assert not Conversation.objects.filter(rated_at__isnull=False).exists()


def test_it_counts_with_the_widgets_requests(api, rated_kit, clock):
    session = closed_chat(api, rated_kit)
    r = rate(api, rated_kit.tenant, session, {"rating": "good"})
    assert r.status_code == 200 and standing(r) == ("address", 119)
    preset(policy.tenant_identity(rated_kit.tenant, "public_widget"), "tenant", 1_200)
    r = rate(api, rated_kit.tenant, session, {"rating": "bad"})
    assert r.status_code == 429 and set(r.json()) == {"error"}
    assert Conversation.objects.get(pk=session).rating == "good"


def test_shown_counted_exported_and_erased(api, rated_kit, manager):
    kit = rated_kit
    sessions = [closed_chat(api, kit, visitor=f"v_{i}") for i in range(3)]
    for session, visitor, body in zip(sessions, ("v_0", "v_1"), (
            {"rating": "good", "comment": "Quick and <b>kind</b>"}, {"rating": "bad"}),
            strict=False):
        assert rate(api, kit.tenant, session, body, visitor=visitor).status_code == 200
    page = signed_in(manager).get(f"/dashboard/conversations/{sessions[0]}/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="rating"' in html and ">Good<" in html
    assert "Quick and &lt;b&gt;kind&lt;/b&gt;" in html  # the visitor's words, escaped
    today = timezone.now().date()
    period = Period(today - timedelta(days=1), today)
    assert analytics_satisfaction(tenant=kit.tenant, livemode=True, period=period) == {
        "rated": 2, "good": 1, "bad": 1, "satisfactionRate": 0.5}
    assert analytics_satisfaction(tenant=kit.tenant, livemode=False, period=period)["rated"] == 0
    analytics = signed_in(manager).get("/dashboard/analytics/").content.decode()
    assert "Visitors satisfied" in analytics and "1 good of 2 ratings" in analytics
    export = api.get("/api/v1/privacy/exports?visitorId=v_0", headers=kit.auth())
    assert export.status_code == 200, export.text
    (conversation,) = export.json()["conversations"]
    assert conversation["rating"]["comment"] == "Quick and <b>kind</b>"
    conversation_erase(conversation=Conversation.objects.get(pk=sessions[0]), requested_by="test")
    assert not Conversation.objects.filter(rating_comment__contains="kind").exists()
    assert analytics_satisfaction(tenant=kit.tenant, livemode=True, period=period)["rated"] == 1
