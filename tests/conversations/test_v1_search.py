"""``GET /api/v1/conversations/search`` (docs/conversations.md, "Search"): the messages of the
key's tenant and mode that hold the words, newest first, with their conversation; pages without
a total; read scope; a query without a word is a 400 with its field. Notes are no messages."""

from __future__ import annotations

import pytest

from conversations.services import (
    conversation_reply_as_human,
    conversation_tag_add,
    conversation_take_over,
    note_create,
    tag_create,
)
from tenants.services import user_create
from tests.factories import PASSWORD, make_lead
from tests.inbox_helpers import conversation_with

URL = "/api/v1/conversations/search"


@pytest.mark.parametrize("scope", ["read", "write", "admin"])
def test_finds_the_tenants_messages_of_its_mode(api, kit, stranger, scope):
    lead = make_lead(kit, email="ann@hooli.test")
    ours = conversation_with(kit, ("user", "Do you have an invoice portal?"),
                             ("assistant", "Yes: every invoice is in Billing."), lead=lead)
    conversation_with(kit, ("user", "invoice in test mode"), mode="test", visitor="v-test")
    conversation_with(stranger, ("user", "invoice of a stranger"))
    r = api.get(f"{URL}?q=INVOICE", headers=kit.auth(scope))
    assert r.status_code == 200, r.text
    body = r.json()
    assert [m["content"] for m in body["data"]] == ["Yes: every invoice is in Billing.",
                                                    "Do you have an invoice portal?"]
    first = body["data"][0]
    assert first["id"].startswith("msg_") and first["role"] == "assistant" and first["author"] is None
    assert first["conversation"] == {"id": f"conv_{ours.pk.hex}", "leadId": f"lead_{lead.pk.hex}",
                                     "status": "active", "channel": "web_chat", "tags": []}
    assert body["pagination"] == {"page": 1, "limit": 25, "hasMore": False}
    test = api.get(f"{URL}?q=invoice", headers=kit.auth("read", "test")).json()
    assert [m["content"] for m in test["data"]] == ["invoice in test mode"]


def test_filters_pages_and_tags(api, kit):
    for n in range(3):
        conversation_with(kit, ("user", f"refund number {n}"), visitor=f"v{n}")
    handed = conversation_with(kit, ("user", "refund, a person please"), visitor="v-h",
                               status="handed_off", channel="api")
    conversation_tag_add(conversation=handed, tag=tag_create(tenant=kit.tenant, name="Billing"),
                         user=None)
    first = api.get(f"{URL}?q=refund&limit=2", headers=kit.auth("read")).json()
    assert [m["content"] for m in first["data"]] == ["refund, a person please", "refund number 2"]
    assert first["data"][0]["conversation"]["tags"] == ["Billing"]
    assert first["pagination"] == {"page": 1, "limit": 2, "hasMore": True}
    second = api.get(f"{URL}?q=refund&limit=2&page=2", headers=kit.auth("read")).json()
    assert [m["content"] for m in second["data"]] == ["refund number 1", "refund number 0"]
    assert second["pagination"]["hasMore"] is False
    for query in ("status=handed_off", "channel=api"):
        found = api.get(f"{URL}?q=refund&{query}", headers=kit.auth("read")).json()["data"]
        assert [m["content"] for m in found] == ["refund, a person please"]


def test_a_persons_reply_names_its_author_and_notes_are_not_messages(api, kit):
    rep = user_create(tenant=kit.tenant, email="ray@acme.test", password=PASSWORD)
    conversation = conversation_with(kit, ("user", "hello"))
    conversation_take_over(conversation=conversation, user=rep)
    conversation_reply_as_human(conversation=conversation, author=rep, content="Ray's discount")
    note_create(tenant=kit.tenant, livemode=True, author=rep, conversation=conversation,
                content="internal discount ceiling 20%")
    found = api.get(f"{URL}?q=discount", headers=kit.auth("read")).json()["data"]
    assert [(m["content"], m["author"]) for m in found] == [("Ray's discount",
                                                             f"user_{rep.pk.hex}")]


@pytest.mark.parametrize("query, code", [("", "required"), ("?q=", "required"),
                                         ("?q=%21%21%21", "required"),
                                         ("?q=ok&status=open", "invalid_enum"),
                                         ("?q=ok&limit=101", "out_of_range")])
def test_a_query_without_a_word_or_a_bad_filter_is_refused(api, kit, query, code):
    r = api.get(f"{URL}{query}", headers=kit.auth("read"))
    assert r.status_code == 400, r.text
    details = r.json()["error"]["details"]
    assert len(details) == 1 and details[0]["code"] == code


def test_a_fixed_number_of_statements(api, kit, django_assert_max_num_queries):
    for n in range(12):
        conversation_with(kit, ("user", f"onboarding question {n}"), visitor=f"v{n}")
    with django_assert_max_num_queries(5) as few:
        api.get(f"{URL}?q=onboarding&limit=2", headers=kit.auth("read"))
    with django_assert_max_num_queries(len(few.captured_queries)):
        api.get(f"{URL}?q=onboarding&limit=12", headers=kit.auth("read"))
