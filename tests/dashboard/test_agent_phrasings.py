"""Settings, "Your own example phrasings", over HTTP: a manager adds phrasings (listed under
their decision, with a Remove button each), a refused one comes back with its reason beside its
field and what was typed, a rep cannot change them, and another tenant's manager cannot remove
them. (In a browser, with a chat turn that follows them: test_browser_agent_phrasings.py.)"""

from __future__ import annotations

import pytest

from tenants.models import Tenant
from tenants.services import MAX_AGENT_PHRASINGS, agent_phrasing_add, user_create
from tests.dashboard.client import signed_in
from tests.dashboard.html import errors_beside, page, value_of
from tests.factories import PASSWORD

SETTINGS = "/dashboard/settings/"
ADD = "/dashboard/settings/phrasings/"


def _phrasings(tenant) -> list[tuple[str, str]]:
    tenant = Tenant.objects.get(pk=tenant.pk)
    return [(p["decision"], p["text"]) for p in tenant.agent_phrasings]


def _section(content: bytes):
    (section,) = page(content).xpath("//section[@id='phrasings']")
    return section


def _listed(content: bytes) -> dict[str, list[str]]:
    """The phrasings the section lists, under each decision's label."""
    section = _section(content)
    return {ul.getprevious().text_content().strip(): [
        li.xpath("string(./span[@class='phrasing-text'])").strip("“”") for li in ul.xpath("./li")]
        for ul in section.xpath(".//ul[contains(@class, 'phrasings')]")}


def _messages(content: bytes) -> str:
    return " ".join(" ".join(page(content).xpath("//ul[@class='messages']//text()")).split())


def test_a_manager_adds_and_removes_phrasings(kit, manager):
    client = signed_in(manager)
    shown = client.get(SETTINGS)
    assert shown.status_code == 200
    section = _section(shown.content)
    assert "Phrases your visitors use that mean this; they take effect on the next message" in (
        section.text_content())
    labels = [o.text for o in section.xpath(".//select[@name='phrasing-decision']/option")]
    assert labels[:2] == ["Wants to talk to a person", "Wants a meeting or a demo"]
    assert _listed(shown.content) == {}

    r = client.post(ADD, {"phrasing-decision": "person",
                          "phrasing-text": " can the night shift pick this up "}, follow=True)
    assert r.status_code == 200
    assert "Phrasing added: it counts from the next message." in _messages(r.content)
    client.post(ADD, {"phrasing-decision": "meeting",
                      "phrasing-text": "could we look at it together on a screen"})
    client.post(ADD, {"phrasing-decision": "person", "phrasing-text": "anyone on call tonight?"})
    shown = client.get(SETTINGS)
    assert _listed(shown.content) == {
        "Wants to talk to a person": ["can the night shift pick this up", "anyone on call tonight?"],
        "Wants a meeting or a demo": ["could we look at it together on a screen"]}
    assert f"3 of {MAX_AGENT_PHRASINGS} phrasings" in _section(shown.content).text_content()

    (remove,) = _section(shown.content).xpath(
        ".//li[contains(., 'night shift')]//form/@action")
    r = client.post(remove, follow=True)
    assert "Phrasing removed" in _messages(r.content)
    assert _phrasings(kit.tenant) == [("meeting", "could we look at it together on a screen"),
                                      ("person", "anyone on call tonight?")]
    # Removed twice (another tab): said so, nothing else changes.
    r = client.post(remove, follow=True)
    assert "No such phrasing." in _messages(r.content)
    assert len(_phrasings(kit.tenant)) == 2


@pytest.mark.parametrize(("text", "reason"), [
    ("can the night shift\npick this up", "Line breaks, tabs and other control characters"),
    ("x" * 301, "at most 300 characters"),
    ("", "This field is required."),
])
def test_a_refused_phrasing_comes_back_with_its_reason_beside_it(kit, manager, text, reason):
    client = signed_in(manager)
    r = client.post(ADD, {"phrasing-decision": "support", "phrasing-text": text})
    assert r.status_code == 400
    assert "Nothing was saved" in _messages(r.content) or "not added" in _messages(r.content)
    assert any(reason.lower() in e.lower() for e in errors_beside(r.content, "id_phrasing-text"))
    assert (value_of(r.content, "id_phrasing-text") or "") == text
    (selected,) = page(r.content).xpath("//select[@name='phrasing-decision']/option[@selected]")
    assert selected.get("value") == "support"
    assert _phrasings(kit.tenant) == []


def test_the_same_phrasing_twice_and_a_full_list_are_refused_above_the_form(kit, manager):
    client = signed_in(manager)
    client.post(ADD, {"phrasing-decision": "goodbye", "phrasing-text": "that is all"})
    r = client.post(ADD, {"phrasing-decision": "goodbye", "phrasing-text": "That is ALL"})
    assert r.status_code == 400
    (form,) = page(r.content).xpath("//form[@id='new-phrasing']")
    assert "already has this phrasing" in form.text_content()
    for n in range(MAX_AGENT_PHRASINGS - 1):
        agent_phrasing_add(tenant=kit.tenant, decision="pricing", text=f"price of plan {n}")
    r = client.post(ADD, {"phrasing-decision": "goodbye", "phrasing-text": "see you"})
    assert r.status_code == 400 and "remove one first" in _messages(r.content)
    assert len(_phrasings(kit.tenant)) == MAX_AGENT_PHRASINGS


def test_a_rep_can_neither_see_nor_change_them(kit, manager, rep):
    agent_phrasing_add(tenant=kit.tenant, decision="person", text="anyone on call tonight")
    (phrasing,) = Tenant.objects.get(pk=kit.tenant.pk).agent_phrasings
    client = signed_in(rep)
    assert client.get(SETTINGS).status_code == 302
    r = client.post(ADD, {"phrasing-decision": "person", "phrasing-text": "night shift?"})
    assert r.status_code == 302
    r = client.post(f"/dashboard/settings/phrasings/{phrasing['id']}/remove/")
    assert r.status_code == 302
    assert _phrasings(kit.tenant) == [("person", "anyone on call tonight")]


def test_another_tenants_manager_cannot_remove_them(kit, stranger):
    agent_phrasing_add(tenant=kit.tenant, decision="person", text="anyone on call tonight")
    (phrasing,) = Tenant.objects.get(pk=kit.tenant.pk).agent_phrasings
    theirs = user_create(tenant=stranger.tenant, email="sam@stranger.test", role="manager",
                         password=PASSWORD)
    client = signed_in(theirs)
    assert "anyone on call" not in client.get(SETTINGS).content.decode()
    r = client.post(f"/dashboard/settings/phrasings/{phrasing['id']}/remove/", follow=True)
    assert "No such phrasing." in _messages(r.content)
    assert _phrasings(kit.tenant) == [("person", "anyone on call tonight")]


def test_removing_needs_a_post(kit, manager):
    agent_phrasing_add(tenant=kit.tenant, decision="person", text="anyone on call tonight")
    (phrasing,) = Tenant.objects.get(pk=kit.tenant.pk).agent_phrasings
    r = signed_in(manager).get(f"/dashboard/settings/phrasings/{phrasing['id']}/remove/")
    assert r.status_code == 405
    assert len(_phrasings(kit.tenant)) == 1
