"""/api/v1/agent/phrasings: a tenant's own example phrasings of the agent's decisions (docs/agent.md,
"Adding phrasings"; docs/api.md). Added, listed and removed through the API, they count from the
next chat turn on, at no extra statement per turn, and each is embedded once per process."""

from __future__ import annotations

import pytest

from agent import understanding
from conversations.models import Message
from core import embeddings
from tenants.models import AgentDecision, Tenant
from tenants.services import MAX_AGENT_PHRASINGS, agent_phrasing_add
from tests.chat_helpers import chat
from tests.conversations.test_chat_turn_queries import CONTINUED_TURN, NO_WAIT

URL = "/api/v1/agent/phrasings"
NIGHT_SHIFT = "can the night shift pick this up"
ASKED = "is the night shift around to take this?"


def add(api, kit, decision="person", text=NIGHT_SHIFT, *, who=None, **kw):
    return api.post(URL, json={"decision": decision, "text": text},
                    headers=(who or kit).auth("admin", kw.get("mode", "live")))


def listed(api, kit, scope="read", mode="live", query=""):
    r = api.get(URL + query, headers=kit.auth(scope, mode))
    assert r.status_code == 200, r.content
    return r.json()


# --- the list, its shape and its order -----------------------------------------------------------

def test_add_list_and_remove(api, kit):
    r = add(api, kit, text="  can the night shift pick this up  ")
    assert r.status_code == 201, r.content
    added = r.json()
    assert set(added) == {"id", "decision", "text", "createdAt"}
    assert added["id"].startswith("phr_") and len(added["id"]) == 4 + 32
    assert (added["decision"], added["text"]) == ("person", NIGHT_SHIFT)  # trimmed
    assert added["createdAt"].endswith("Z") and len(added["createdAt"]) == 24
    second = add(api, kit, "meeting", "could we look at it together on a screen").json()

    page = listed(api, kit)
    assert page["data"] == [added, second]  # oldest first
    assert page["pagination"] == {"page": 1, "limit": 25, "total": 2, "totalPages": 1,
                                  "hasMore": False}

    r = api.delete(f"{URL}/{added['id']}", headers=kit.auth("admin"))
    assert r.status_code == 204 and r.content == b""
    assert listed(api, kit)["data"] == [second]
    # Gone: removing it again is a 404.
    r = api.delete(f"{URL}/{added['id']}", headers=kit.auth("admin"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_pages(api, kit):
    ids = [add(api, kit, "pricing", f"what would {n} seats set us back").json()["id"]
           for n in range(5)]
    page = listed(api, kit, query="?page=2&limit=2")
    assert [p["id"] for p in page["data"]] == ids[2:4]
    assert page["pagination"] == {"page": 2, "limit": 2, "total": 5, "totalPages": 3,
                                  "hasMore": True}
    assert listed(api, kit, query="?page=4&limit=2")["data"] == []
    r = api.get(URL + "?limit=101", headers=kit.auth("read"))
    assert r.status_code == 400 and r.json()["error"]["details"][0]["field"] == "limit"


def test_both_modes_see_and_change_the_same_list(api, kit):
    """Phrasings are a setting of the tenant, as its users are: not live or test data."""
    added = add(api, kit, mode="test").json()
    assert listed(api, kit, mode="live")["data"] == [added]
    assert listed(api, kit, mode="test")["data"] == [added]
    r = api.delete(f"{URL}/{added['id']}", headers=kit.auth("admin", "live"))
    assert r.status_code == 204
    assert listed(api, kit, mode="test")["data"] == []


# --- another tenant, ids -------------------------------------------------------------------------

def test_a_stranger_neither_sees_nor_removes_them(api, kit, stranger):
    mine = add(api, kit).json()
    theirs = add(api, stranger, "goodbye", "that is all from me").json()
    assert listed(api, kit)["data"] == [mine]
    assert listed(api, stranger)["data"] == [theirs]
    for who, other in ((stranger, mine), (kit, theirs)):
        r = api.delete(f"{URL}/{other['id']}", headers=who.auth("admin"))
        assert r.status_code == 404, r.content
        assert r.json()["error"]["code"] == "not_found"
    assert listed(api, kit)["data"] == [mine]
    assert listed(api, stranger)["data"] == [theirs]


@pytest.mark.parametrize("wrong", ["lead_{hex}", "phr_{hex}x", "{hex}", "phr_{upper}", "phr_",
                                   "phr_00000000000000000000000000000000"])
def test_unknown_or_malformed_ids_are_404(api, kit, wrong):
    hex_ = add(api, kit).json()["id"][4:]
    r = api.delete(f"{URL}/{wrong.format(hex=hex_, upper=hex_.upper())}",
                   headers=kit.auth("admin"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    assert len(listed(api, kit)["data"]) == 1


# --- scopes --------------------------------------------------------------------------------------

@pytest.mark.parametrize("scope", ["read", "write"])
def test_adding_and_removing_need_the_admin_scope(api, kit, scope):
    added = add(api, kit).json()
    r = api.post(URL, json={"decision": "person", "text": "anyone on call tonight"},
                 headers=kit.auth(scope))
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert "admin scope" in r.json()["error"]["message"]
    r = api.delete(f"{URL}/{added['id']}", headers=kit.auth(scope))
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert listed(api, kit, scope)["data"] == [added]  # the read scope lists them


def test_without_a_key_it_is_401(api, kit):
    assert api.get(URL).status_code == 401
    assert api.post(URL, json={"decision": "person", "text": "hi"}).status_code == 401


# --- what a phrasing may be ----------------------------------------------------------------------

@pytest.mark.parametrize(("body", "field", "code"), [
    ({"text": NIGHT_SHIFT}, "decision", "required"),
    ({"decision": "human_request", "text": NIGHT_SHIFT}, "decision", "invalid_enum"),
    ({"decision": ["person"], "text": NIGHT_SHIFT}, "decision", "invalid_enum"),
    ({"decision": "person"}, "text", "required"),
    ({"decision": "person", "text": ""}, "text", "required"),
    ({"decision": "person", "text": " \t "}, "text", "required"),
    ({"decision": "person", "text": None}, "text", "required"),
    ({"decision": "person", "text": 42}, "text", "invalid_format"),
])
def test_a_malformed_body_is_400_with_the_field(api, kit, body, field, code):
    r = api.post(URL, json=body, headers=kit.auth("admin"))
    assert r.status_code == 400, r.content
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    assert {"field": field, "code": code} in [
        {"field": d["field"], "code": d["code"]} for d in error["details"]]
    assert listed(api, kit)["data"] == []


@pytest.mark.parametrize(("text", "code"), [
    ("x" * 301, "too_long"),
    ("can the night shift\npick this up", "invalid_format"),
    ("can the night shift\u2028pick this up", "invalid_format"),
    ("tab\there", "invalid_format"),
])
def test_a_phrasing_that_breaks_a_rule_is_422_with_the_field(api, kit, text, code):
    r = api.post(URL, json={"decision": "person", "text": text}, headers=kit.auth("admin"))
    assert r.status_code == 422, r.content
    error = r.json()["error"]
    assert error["code"] == "unprocessable"
    assert [(d["field"], d["code"]) for d in error["details"]] == [("text", code)]
    assert listed(api, kit)["data"] == []


def test_three_hundred_characters_once_trimmed_are_taken(api, kit):
    r = api.post(URL, json={"decision": "support", "text": "  " + "y" * 300 + " "},
                 headers=kit.auth("admin"))
    assert r.status_code == 201 and r.json()["text"] == "y" * 300


def test_the_same_phrasing_twice_for_a_decision_is_a_409(api, kit):
    first = add(api, kit).json()
    r = add(api, kit, text="Can  the NIGHT shift pick this up")
    assert r.status_code == 409, r.content
    assert r.json()["error"]["code"] == "conflict"
    assert "already" in r.json()["error"]["message"]
    # The same words for another decision are another phrasing.
    assert add(api, kit, "support", NIGHT_SHIFT).status_code == 201
    assert [p["id"] for p in listed(api, kit)["data"]][0] == first["id"]


def test_the_two_hundred_and_first_is_a_409(api, kit):
    for n in range(MAX_AGENT_PHRASINGS - 1):
        agent_phrasing_add(tenant=kit.tenant, decision="pricing", text=f"price of plan {n}")
    assert add(api, kit).status_code == 201  # the 200th
    r = add(api, kit, "goodbye", "see you around")
    assert r.status_code == 409, r.content
    assert r.json()["error"]["code"] == "conflict"
    assert str(MAX_AGENT_PHRASINGS) in r.json()["error"]["message"]
    assert listed(api, kit)["pagination"]["total"] == MAX_AGENT_PHRASINGS
    # Room again once one is removed.
    first = listed(api, kit, query="?limit=1")["data"][0]
    assert api.delete(f"{URL}/{first['id']}", headers=kit.auth("admin")).status_code == 204
    assert add(api, kit, "goodbye", "see you around").status_code == 201


def test_the_tenants_decisions_are_the_agents():
    """``tenants`` may not import ``agent`` (it sits below it): its vocabulary is kept equal
    here, so that a decision the agent learns is one a tenant can add phrasings for."""
    assert tuple(AgentDecision.values) == understanding.DECISIONS


# --- they count from the next turn ---------------------------------------------------------------

def _decisions(session: str) -> dict:
    """``Message.turn["decisions"]`` of the agent's last reply in the session (``sess_<hex>``)."""
    reply = Message.objects.filter(conversation_id=session.removeprefix("sess_"),
                                   role="assistant").order_by("-sequence").first()
    return reply.turn.get("decisions", {})


def test_a_phrasing_counts_from_the_next_turn_and_stops_counting_once_removed(api, kit):
    first = chat(api, kit, ASKED)
    assert first.status_code == 200, first.content
    assert first.json().get("handoff") is None  # the agent's own examples do not take it
    added = add(api, kit).json()

    r = chat(api, kit, ASKED, visitor="visitor-2")
    assert r.status_code == 200, r.content
    assert r.json().get("handoff")
    person = _decisions(r.json()["sessionId"])["person"]
    assert person["by"] == "tenant"
    assert person["nearest"][0]["text"] == NIGHT_SHIFT
    assert person["score"] >= understanding.TENANT_THRESHOLD

    assert api.delete(f"{URL}/{added['id']}", headers=kit.auth("admin")).status_code == 204
    r = chat(api, kit, ASKED, visitor="visitor-3")
    assert r.json().get("handoff") is None
    assert "person" not in _decisions(r.json()["sessionId"])


def test_a_tenants_phrasing_counts_for_that_tenant_only(api, kit, stranger):
    add(api, kit)
    r = chat(api, stranger, ASKED)
    assert r.status_code == 200 and r.json().get("handoff") is None


def test_phrasings_cost_a_turn_no_statement(api, kit, django_assert_max_num_queries):
    for n in range(20):
        agent_phrasing_add(tenant=kit.tenant, decision="objection", text=f"too dear for us {n}")
    add(api, kit, "meeting", "could we look at it together on a screen")
    sid = chat(api, kit, "Hi").json()["sessionId"]
    with django_assert_max_num_queries(CONTINUED_TURN + NO_WAIT):
        r = chat(api, kit, "Do you have an API?", session=sid)
    assert r.status_code == 200


def test_each_phrasing_is_embedded_once_per_process(api, kit, monkeypatch):
    """The tenant's phrasings are embedded on the first turn that needs them, not on every
    turn; one added later is embedded on its own."""
    encoded: list[str] = []
    real = embeddings.encode

    def counting(texts):
        encoded.extend(texts)
        return real(texts)

    monkeypatch.setattr(embeddings, "encode", counting)
    monkeypatch.setattr(understanding, "_vectors", type(understanding._vectors)())
    add(api, kit)
    sid = chat(api, kit, "Do you integrate with Salesforce?").json()["sessionId"]
    chat(api, kit, "Is there a free trial?", session=sid)
    chat(api, kit, "We need it this quarter", session=sid)
    assert encoded.count(NIGHT_SHIFT) == 1
    add(api, kit, "person", "is anyone from the late team in")
    chat(api, kit, "Do you have an API?", session=sid)
    chat(api, kit, "What about SSO?", session=sid)
    assert encoded.count(NIGHT_SHIFT) == 1
    assert encoded.count("is anyone from the late team in") == 1


def test_a_stored_phrasing_of_an_unknown_decision_is_left_out(api, kit):
    """A decision the agent no longer knows (a phrasing stored before it was dropped) does not
    break the turn."""
    Tenant.objects.filter(pk=kit.tenant.pk).update(agent_phrasings=[
        {"id": "0" * 32, "decision": "retired", "text": NIGHT_SHIFT,
         "createdAt": "2026-01-01T00:00:00.000Z"}])
    r = chat(api, kit, ASKED)
    assert r.status_code == 200 and r.json().get("handoff") is None


def test_under_a_models_analysis_a_phrasing_still_hands_off(api, kit, fake):
    """A tenant on a language model: the deterministic net under the model's analysis reads the
    tenant's phrasings too, and hands off what the model missed."""
    fake.analysis = {"intent": "other", "confidence": 0.6}
    r = chat(api, kit, ASKED)
    assert r.status_code == 200 and r.json().get("handoff") is None
    add(api, kit)
    r = chat(api, kit, ASKED, visitor="visitor-2")
    assert r.status_code == 200 and r.json().get("handoff"), r.content
    reply = Message.objects.filter(conversation_id=r.json()["sessionId"].removeprefix("sess_"),
                                   role="assistant").get()
    assert (reply.turn["analysis"], reply.turn["rules"]) == ("model", ["handoff"])
    assert reply.turn["decisions"]["person"]["by"] == "tenant"
