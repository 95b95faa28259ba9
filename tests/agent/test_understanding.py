"""Decisions by meaning (docs/agent.md, "How the agent understands"): a visitor who asks for a
person or a meeting in their own words, in their language, is understood; a message that only
mentions people or meetings is not taken for a request; the decision and its evidence are
recorded on the turn; AGENT_UNDERSTANDING=rules keeps the rules alone."""

from __future__ import annotations

import pytest

from agent import understanding
from conversations.models import Conversation, Message
from core import embeddings
from tests.chat_helpers import chat
from tests.factories import UserFactory

# Written for these tests: none is an example phrasing (examples.yaml) nor a rule's wording.
ASKS_FOR_A_PERSON = {
    "en": "honestly i'd feel better going over this with one of your people",
    "de": "gibt es jemanden bei euch, mit dem ich das kurz besprechen kann?",
    "fr": "je voudrais échanger directement avec un membre de votre équipe",
    "it": "vorrei parlare con qualcuno in carne e ossa",
    "nl": "kan ik dit met een collega van jullie bespreken?",
}
ASKS_FOR_A_MEETING = {
    "en": "could we jump on a video call so you can show me around?",
    "de": "können wir uns nächste Woche per Video zusammensetzen?",
    "es": "¿podemos hacer una videollamada para verlo juntos?",
}
MENTIONS_ONLY = [
    "our support people answer about 200 tickets a day",
    "unsere Kollegen nutzen schon einen Kalender für Termine",
    "le commercial qui nous suit part en congé demain",
]


@pytest.mark.parametrize("language", sorted(ASKS_FOR_A_PERSON))
def test_a_request_for_a_person_in_other_words_is_understood(language):
    found = understanding.understand(ASKS_FOR_A_PERSON[language])
    assert "person" in found.decisions, found.evidence["person"]


@pytest.mark.parametrize("language", sorted(ASKS_FOR_A_MEETING))
def test_a_request_for_a_meeting_without_the_usual_words_is_understood(language):
    found = understanding.understand(ASKS_FOR_A_MEETING[language])
    assert "meeting" in found.decisions, found.evidence["meeting"]


@pytest.mark.parametrize("message", MENTIONS_ONLY)
def test_a_mention_of_people_or_meetings_is_no_request(message):
    found = understanding.understand(message)
    assert not {"person", "meeting"} & set(found.decisions), found.as_turn()


def test_a_long_message_is_read_sentence_by_sentence():
    message = ("Thanks, the pricing page was clear and the trial worked fine on our staging site. "
               "Before we go further, could somebody from your sales team call me back?")
    found = understanding.understand(message)
    assert "person" in found.decisions
    # The sentence that asks decided it: the whole message alone reads far less sure.
    model = understanding.builtin_model()
    alone = float(model.probabilities(embeddings.encode([message]))["person"][0])
    assert found.evidence["person"].score > alone


def test_the_evidence_names_the_nearest_examples_and_the_threshold():
    found = understanding.understand(ASKS_FOR_A_PERSON["en"])
    recorded = found.as_turn()["person"]
    assert recorded["score"] >= recorded["threshold"] == understanding.THRESHOLDS["person"]
    examples = {e.text for e in understanding.builtin_model().examples if "person" in e.decisions}
    assert len(recorded["nearest"]) == understanding.NEAREST
    assert all(n["text"] in examples and -1 <= n["similarity"] <= 1 for n in recorded["nearest"])


def test_a_tenants_own_examples_count():
    message = "is the night shift around to take this?"
    assert "person" not in understanding.understand(message).decisions
    own = [understanding.Example(decisions=frozenset({"person"}), text=text, source="tenant")
           for text in ("can the night shift pick this up", "is the night team around")]
    assert "person" in understanding.understand(message, tenant_examples=own).decisions


def test_the_chat_hands_off_and_records_the_decision_on_the_turn(api, kit):
    UserFactory(tenant=kit.tenant, available=True)
    r = chat(api, kit, ASKS_FOR_A_PERSON["it"])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["intent"] == "human_request" and body["handoff"]["suggestedTeam"] == "sales"
    assert Conversation.objects.get().status == "handed_off"
    reply = Message.objects.get(pk=body["id"].split("_", 1)[1])
    assert "person" in reply.turn["decisions"]
    assert reply.turn["decisions"]["person"]["nearest"]


def test_a_mention_goes_through_the_chat_without_a_handoff(api, kit):
    UserFactory(tenant=kit.tenant, available=True)
    r = chat(api, kit, MENTIONS_ONLY[0])
    assert r.status_code == 200 and r.json().get("handoff") is None
    assert Conversation.objects.get().status == "active"


def test_rules_only_is_todays_path(api, kit, settings):
    settings.AGENT_UNDERSTANDING = "rules"
    UserFactory(tenant=kit.tenant, available=True)
    r = chat(api, kit, ASKS_FOR_A_PERSON["en"])
    assert r.status_code == 200 and r.json().get("handoff") is None
    reply = Message.objects.get(pk=r.json()["id"].split("_", 1)[1])
    assert "decisions" not in reply.turn
