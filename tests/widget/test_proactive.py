"""Proactive messages through the widget's public endpoints (docs/widget.md, "Proactive
messages"): the configuration lists the tenant's active ones in order, the widget's report that
one was shown counts it, and a reply that names one stores it as the agent's message, marked
proactive, before the visitor's, as the API and the staff then read it. The browser's side:
tests/widget/test_browser_proactive.py."""

from __future__ import annotations

import uuid

from conversations.models import Message, ProactiveMessage
from conversations.services import proactive_message_create
from tests.widget.test_consent import widget_chat


def _config(api, kit):
    r = api.get(f"/api/widget?tenant={kit.tenant.public_id}")
    assert r.status_code == 200, r.content
    return r.json()["proactive"]


def test_the_configuration_lists_the_active_ones_in_order(api, kit, stranger,
                                                           django_assert_max_num_queries):
    late = proactive_message_create(tenant=kit.tenant, message="Still there?", seconds_on_page=30,
                                    priority=50)
    pricing = proactive_message_create(tenant=kit.tenant, message="Questions about pricing?",
                                       url_pattern="/pricing", priority=10)
    proactive_message_create(tenant=kit.tenant, message="Off", url_pattern="/off", active=False)
    back = proactive_message_create(tenant=kit.tenant, message="Welcome back!", returning="yes",
                                    url_pattern="https://shop.acme.test/*", priority=50)
    proactive_message_create(tenant=stranger.tenant, message="Not yours", url_pattern="/")
    # One request, a fixed number of queries however many there are.
    with django_assert_max_num_queries(6):
        listed = _config(api, kit)
    assert listed == [
        {"id": pricing.pk.hex, "message": "Questions about pricing?", "url": "/pricing",
         "seconds": 0, "returning": None},
        {"id": late.pk.hex, "message": "Still there?", "url": None, "seconds": 30,
         "returning": None},
        {"id": back.pk.hex, "message": "Welcome back!", "url": "https://shop.acme.test/*",
         "seconds": 0, "returning": True},
    ]


def test_a_shown_message_is_counted_for_its_tenant_only(api, kit, stranger):
    shown = proactive_message_create(tenant=kit.tenant, message="Hi", url_pattern="/pricing")
    off = proactive_message_create(tenant=kit.tenant, message="Off", url_pattern="/x", active=False)
    url = f"/api/widget/proactive?tenant={kit.tenant.public_id}&id={shown.pk.hex}"
    assert api.post(url).status_code == 204
    assert api.post(url).status_code == 204
    # Another tenant's id, an inactive one, an unknown one: 404, nothing counted; a bad id: 400.
    theirs = f"/api/widget/proactive?tenant={stranger.tenant.public_id}&id={shown.pk.hex}"
    assert api.post(theirs).status_code == 404
    assert api.post(f"/api/widget/proactive?tenant={kit.tenant.public_id}&id={off.pk.hex}"
                    ).status_code == 404
    assert api.post(f"/api/widget/proactive?tenant={kit.tenant.public_id}&id={uuid.uuid4().hex}"
                    ).status_code == 404
    bad = api.post(f"/api/widget/proactive?tenant={kit.tenant.public_id}&id=nope")
    assert bad.status_code == 400 and "error" in bad.json()
    assert ProactiveMessage.objects.get(pk=shown.pk).shown_count == 2
    assert ProactiveMessage.objects.get(pk=off.pk).shown_count == 0


def test_a_reply_stores_the_proactive_message_as_the_agents_first(api, kit):
    pricing = proactive_message_create(tenant=kit.tenant, message="Questions about **pricing**?",
                                       url_pattern="/pricing")
    r = widget_chat(api, kit, "Yes, how much for 10 seats?",
                    metadata={"proactive": pricing.pk.hex, "landingPage": "https://a.test/pricing"})
    assert r.status_code == 200, r.content
    sid = r.json()["sessionId"]
    # The API shows it first, as the agent's, marked proactive; then the visitor's reply.
    detail = api.get(f"/api/v1/conversations/conv_{uuid.UUID(sid).hex}",
                     headers=kit.auth("read")).json()
    first, second = detail["messages"][:2]
    assert first["role"] == "assistant" and first["proactive"] is True
    assert first["content"] == "Questions about **pricing**?"
    assert second["role"] == "user" and second["content"] == "Yes, how much for 10 seats?"
    assert all("proactive" not in m for m in detail["messages"][1:])
    # The metadata keeps the page, not the proactive message's id.
    assert "proactive" not in detail["metadata"]
    # The same reply sent again in the session (its answer was lost) adds nothing.
    widget_chat(api, kit, "And for 20?", session=sid,
                metadata={"proactive": pricing.pk.hex})
    assert Message.objects.filter(tenant=kit.tenant, proactive=True).count() == 1
    assert ProactiveMessage.objects.get(pk=pricing.pk).replied_count == 1


def test_an_unknown_or_foreign_proactive_id_stores_nothing_more(api, kit, stranger):
    theirs = proactive_message_create(tenant=stranger.tenant, message="Their words",
                                      url_pattern="/")
    for given in (theirs.pk.hex, uuid.uuid4().hex, "not-an-id", 42):
        r = widget_chat(api, kit, "Hello", visitor=f"v_{given}", metadata={"proactive": given})
        assert r.status_code == 200, r.content
    assert not Message.objects.filter(tenant=kit.tenant, proactive=True).exists()
    assert not Message.objects.filter(content="Their words").exists()
    assert ProactiveMessage.objects.get(pk=theirs.pk).replied_count == 0


def test_a_v1_clients_metadata_of_the_same_names_is_its_own(api, kit):
    """``proactive`` and ``widgetLanguage`` are the widget's keys on its own chat; a v1 client's
    metadata is arbitrary (the specification) and kept as sent, with no message added."""
    pricing = proactive_message_create(tenant=kit.tenant, message="Questions about pricing?",
                                       url_pattern="/pricing")
    r = api.post("/api/v1/chat", headers=kit.auth("write"), json={
        "message": "How much for 10 seats?", "visitorId": "v_api",
        "metadata": {"proactive": pricing.pk.hex, "widgetLanguage": "de"}})
    assert r.status_code == 200, r.content
    conversation = "conv_" + r.json()["sessionId"].removeprefix("sess_")
    detail = api.get(f"/api/v1/conversations/{conversation}", headers=kit.auth("read")).json()
    assert detail["metadata"]["proactive"] == pricing.pk.hex
    assert detail["metadata"]["widgetLanguage"] == "de"
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    assert ProactiveMessage.objects.get(pk=pricing.pk).replied_count == 0
