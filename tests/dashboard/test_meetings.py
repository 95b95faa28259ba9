"""Meetings and emails on the lead's page: shown with a fixed number of queries, rescheduled and
cancelled by the tenant's staff (never another tenant's), and each person's own email settings."""

from __future__ import annotations

from datetime import UTC
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from conversations import scheduling
from conversations.models import Meeting, OutboundEmail
from tenants.services import tenant_set_meetings
from tests.conversations.meeting_helpers import book
from tests.dashboard.client import signed_in


@pytest.fixture
def booked(api, kit, rep):
    meeting, _ = book(api, kit)
    return meeting


def _lead_page(client, meeting) -> str:
    return client.get(f"/dashboard/leads/{meeting.lead_id}/").content.decode()


def test_the_lead_page_shows_the_meeting_and_its_emails_in_fixed_queries(
        api, kit, rep, booked, django_assert_max_num_queries):
    client = signed_in(rep)
    client.get("/dashboard/")
    # 17: the page's reads, the one INSERT of the staff access audit (docs/privacy.md), and the
    # notes on the lead with the teammates a note may mention.
    with django_assert_max_num_queries(17) as first:
        page = _lead_page(client, booked)
    assert f'id="meeting-{booked.pk}"' in page and "with Ray" in page
    assert "Reschedule" in page and "Cancel meeting" in page
    assert "Meeting confirmation (visitor)" in page and "sam@umbrella.io" in page
    assert "Meeting booked (host)" in page and "Queued" in page
    count = len(first.captured_queries)
    # More meetings and emails, the same number of queries.
    for i in range(3):
        book(api, kit, visitor=f"more{i}", email="sam@umbrella.io")
    with django_assert_max_num_queries(count):
        _lead_page(client, booked)


def test_staff_reschedule_and_cancel_from_the_lead_page(kit, rep, booked):
    client = signed_in(rep)
    target = next(s for s in scheduling.free_slots(kit.tenant, True, now=timezone.now())
                  if s.start != booked.starts_at)
    r = client.post(f"/dashboard/meetings/{booked.pk}/reschedule/", {"slot": target.token})
    assert r.status_code == 302 and r["Location"] == f"/dashboard/leads/{booked.lead_id}/"
    booked.refresh_from_db()
    assert booked.starts_at == target.start and booked.sequence == 1

    r = client.post(f"/dashboard/meetings/{booked.pk}/reschedule/", {"slot": "soon"}, follow=True)
    assert "choose one of the offered times" in r.content.decode()
    r = client.post(f"/dashboard/meetings/{booked.pk}/cancel/", follow=True)
    assert "Meeting cancelled" in r.content.decode()
    booked.refresh_from_db()
    assert (booked.status, booked.cancelled_by, booked.sequence) == ("cancelled", "staff", 2)
    r = client.post(f"/dashboard/meetings/{booked.pk}/cancel/", follow=True)
    assert "already cancelled" in r.content.decode()
    assert sorted(OutboundEmail.objects.values_list("kind", flat=True)) == [
        "host_meeting", "meeting_cancellation", "meeting_invitation", "meeting_update"]


def test_a_staff_cancel_moves_the_lead_back_and_the_history_says_so(rep, booked):
    client = signed_in(rep)
    client.post(f"/dashboard/meetings/{booked.pk}/cancel/")
    page = _lead_page(client, booked)
    from tests.dashboard.test_lead_history import history

    lines = history(page)
    assert "Status: Meeting booked → Qualifying Meeting cancelled by the staff" in lines[0], lines
    assert "Meeting of " in lines[1] and "cancelled by the staff" in lines[1], lines


def test_a_get_changes_nothing(rep, booked):
    client = signed_in(rep)
    assert client.get(f"/dashboard/meetings/{booked.pk}/cancel/").status_code == 405
    assert Meeting.objects.get(pk=booked.pk).status == "scheduled"


def test_another_tenants_staff_cannot_touch_the_meeting(stranger, booked):
    from tenants.services import user_create

    theirs = user_create(tenant=stranger.tenant, email="eve@stranger.test", password="x" * 20)
    client = signed_in(theirs)
    assert client.post(f"/dashboard/meetings/{booked.pk}/cancel/").status_code == 404
    assert client.post(f"/dashboard/meetings/{booked.pk}/reschedule/",
                       {"slot": "2030-01-01T09:00Z"}).status_code == 404
    assert client.get(f"/dashboard/leads/{booked.lead_id}/").status_code == 404
    assert Meeting.objects.get(pk=booked.pk).status == "scheduled"


def test_test_mode_staff_do_not_see_live_meetings(rep, booked):
    client = signed_in(rep)
    client.post("/dashboard/mode/", {"mode": "test"})
    assert client.post(f"/dashboard/meetings/{booked.pk}/cancel/").status_code == 404


def test_a_person_sets_their_own_emails(rep):
    client = signed_in(rep)
    page = client.get("/dashboard/profile/").content.decode()
    assert "Email me when a meeting is booked with me" in page and "checked" in page
    r = client.post("/dashboard/profile/notifications/", {"takes_meetings": "on", "email_on_handoff": "on"})
    assert r.status_code == 302
    rep.refresh_from_db()
    assert (rep.takes_meetings, rep.email_on_meeting, rep.email_on_handoff) == (True, False, True)


def test_the_admin_token_has_no_personal_settings(kit):
    from tests.dashboard.client import Client

    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    r = client.get("/dashboard/profile/")
    assert r.status_code == 302 and r["Location"] == "/dashboard/"


def _when(page: str, meeting) -> str:
    from tests.dashboard.html import page as parsed

    (when,) = parsed(page).xpath(f"//*[@id='meeting-{meeting.pk}']//*[@class='when']")
    return " ".join(when.text_content().split())


def test_the_meeting_s_time_names_its_zone_once(api, kit, rep, booked):
    """Issue 29: "15:30 UTC · UTC". A meeting in UTC says UTC once; one in another zone is
    shown in that zone, named, with the UTC time beside it."""
    client = signed_in(rep)
    assert booked.time_zone == "UTC"
    when = _when(_lead_page(client, booked), booked)
    assert when == booked.starts_at.strftime("%a %b %-d, %H:%M") + " UTC"
    tenant_set_meetings(tenant=kit.tenant, timezone_name="Asia/Tokyo", days=[0, 1, 2, 3, 4, 5, 6],
                        start_hour=0, end_hour=23, minutes=30)
    kit.tenant.refresh_from_db()
    tokyo, _ = book(api, kit, visitor="tokyo", email="kenji@example.jp", name="Kenji Sato")
    assert tokyo.time_zone == "Asia/Tokyo"
    local = tokyo.starts_at.astimezone(ZoneInfo("Asia/Tokyo"))
    assert _when(_lead_page(client, tokyo), tokyo) == (
        f"{local.strftime('%a %b %-d, %H:%M')} (Asia/Tokyo) · "
        f"{tokyo.starts_at.astimezone(UTC).strftime('%a %H:%M')} UTC")
