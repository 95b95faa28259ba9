"""GET and DELETE /api/v1/leads/{id}."""

from __future__ import annotations

import pytest

from conversations.models import Conversation
from core.models import Event
from leads.models import Lead, LeadDailyCount
from leads.services import lead_update
from tests.events import v1_data
from tests.factories import UserFactory, make_lead


def _url(lead) -> str:
    return f"/api/v1/leads/lead_{lead.pk.hex}"


def test_retrieve_adds_conversation_count_last_intent_and_assignee(api, kit):
    rep = UserFactory(tenant=kit.tenant)
    lead = make_lead(kit, name="Ada", assigned_to_id=rep.pk, tags=["vip"])
    lead_update(lead=lead, changes={"last_intent": "pricing"})
    for visitor in ("v1", "v2"):
        Conversation.objects.create(tenant=kit.tenant, livemode=True, lead=lead, visitor_id=visitor)
    # Another lead's and the other mode's conversations do not count.
    Conversation.objects.create(tenant=kit.tenant, livemode=True, visitor_id="v3")
    r = api.get(_url(lead), headers=kit.auth("read"))
    assert r.status_code == 200
    body = r.json()
    assert body["id"] == f"lead_{lead.pk.hex}"
    assert body["conversationCount"] == 2
    assert body["lastIntent"] == "pricing"
    assert body["assignedTo"] == f"user_{rep.pk.hex}"
    assert body["tags"] == ["vip"] and body["name"] == "Ada"
    assert {"firstSeenAt", "lastActiveAt", "createdAt", "updatedAt"} <= set(body)


@pytest.mark.parametrize("path", [
    "/api/v1/leads/lead_" + "0" * 32,          # no such lead
    "/api/v1/leads/user_{hex}",                # the right UUID, the wrong kind
    "/api/v1/leads/{uuid}",                    # the legacy form
    "/api/v1/leads/lead_xyz",
])
def test_unknown_or_malformed_ids_are_404(api, kit, path):
    lead = make_lead(kit)
    r = api.get(path.format(hex=lead.pk.hex, uuid=lead.pk), headers=kit.auth("read"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_stranger_and_other_mode_get_404(api, kit, stranger):
    lead = make_lead(kit)
    assert api.get(_url(lead), headers=stranger.auth("admin")).status_code == 404
    assert api.get(_url(lead), headers=kit.auth("read", "test")).status_code == 404
    sandbox = make_lead(kit, mode="test")
    assert api.get(_url(sandbox), headers=kit.auth("read", "test")).status_code == 200
    assert api.get(_url(sandbox), headers=kit.auth("read")).status_code == 404


def test_retrieve_query_count(api, kit, django_assert_max_num_queries):
    lead = make_lead(kit)
    api.get(_url(lead), headers=kit.auth("read"))
    with django_assert_max_num_queries(3):  # key, lead, conversation count
        assert api.get(_url(lead), headers=kit.auth("read")).status_code == 200


def test_delete_needs_admin_and_emits_lead_deleted(api, kit):
    lead = make_lead(kit, mode="test", name="Ada")
    r = api.delete(_url(lead), headers=kit.auth("write", "test"))
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    r = api.delete(_url(lead), headers=kit.auth("admin", "test"))
    assert r.status_code == 204 and r.content == b""
    assert not Lead.objects.exists()
    deleted = Event.objects.get(type="lead.deleted")
    assert deleted.livemode is False and deleted.lead_id is None
    assert v1_data(deleted)["lead"]["id"] == f"lead_{lead.pk.hex}"
    assert LeadDailyCount.objects.get().count == 0
    r = api.get(_url(lead), headers=kit.auth("read", "test"))
    assert r.status_code == 404
    assert api.delete(_url(lead), headers=kit.auth("admin", "test")).status_code == 404


def test_stranger_and_other_mode_cannot_delete(api, kit, stranger):
    lead = make_lead(kit)
    assert api.delete(_url(lead), headers=stranger.auth("admin")).status_code == 404
    assert api.delete(_url(lead), headers=kit.auth("admin", "test")).status_code == 404
    assert Lead.objects.filter(pk=lead.pk).exists()
    assert not Event.objects.filter(type="lead.deleted").exists()
