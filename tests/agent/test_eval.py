"""The sales evaluation (manage.py eval_agent, docs/agent.md "Evaluation"): its splits and cases
files, the decisions it reads from each turn's record, its figures per decision, language and
split, the aims ``make eval`` asserts, the OpenAI provider through it, and nothing of a run left
behind. The aims themselves are not asserted here: ``make eval`` does that."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from agent.eval import aims_missed
from agent.eval.cases import DEFAULT_PATH, SPLIT_FILES, CaseError, load_cases
from agent.eval.decisions import DECISIONS, turn_decisions
from agent.eval.metrics import summarize
from agent.eval.runner import CaseResult, TurnResult
from agent.management.commands.eval_agent import AimsMissed
from conversations.models import Conversation
from core.languages import SPOKEN
from knowledge.models import Document
from leads.models import Lead
from tenants.models import Tenant

CATEGORIES = {"contact", "human_request", "support", "non_request", "demo", "pricing",
              "objection", "injection"}


def evaluate(*args) -> dict:
    out = StringIO()
    call_command("eval_agent", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def write(directory: Path, text: str, name: str = "cases.yaml") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


# --- running ------------------------------------------------------------------------------------

def test_the_builtin_agent_on_the_original_cases_and_nothing_left_behind(db):
    before = Tenant.objects.count()
    summary = evaluate("--provider", "builtin", "--cases", str(DEFAULT_PATH))
    assert list(summary["splits"]) == ["dev"]
    dev = summary["splits"]["dev"]
    assert dev["cases"] >= 60
    for metric in ("capture", "handoff"):
        assert dev[metric]["precision"] >= 0.95, dev[metric]
        assert dev[metric]["recall"] >= 0.95, dev[metric]
    assert dev["grounding"]["violations"] == 0
    assert dev["turnSeconds"]["median"] > 0 and dev["replyChars"]["max"] > 0
    assert Tenant.objects.count() == before
    assert not Conversation.objects.exists() and not Lead.objects.exists()
    assert not Document.objects.exists()


def test_the_openai_provider_against_the_fake_server(db, fake_server, tmp_path):
    fake_server.reset()
    fake_server.reply = "Sure! Our plans start at $29 per month. Anything else?"
    cases = write(tmp_path, (
        "cases:\n"
        "- id: contact\n"
        "  turns: [\"I'm Dana from Northwind, dana@northwind.example\"]\n"
        "  expect: {capture: {name: Dana, company: Northwind, email: dana@northwind.example}}\n"
        "- id: pricing\n"
        "  setup: {knowledge: [{title: Pricing, text: Starter costs $49 per seat.}]}\n"
        "  turns: [\"How much is it?\"]\n"))
    summary = evaluate("--provider", "openai", "--base-url", fake_server.base_url,
                       "--model", "fake-model", "--cases", str(cases))
    assert summary["agent"] == {"provider": "openai", "model": "fake-model",
                                "baseUrl": fake_server.base_url}
    assert fake_server.analysis_requests() and fake_server.reply_requests()
    # The model understands nothing; the deterministic net still captures the details, and the
    # guard cuts every invented price, which the independent check confirms.
    dev = summary["splits"]["dev"]
    assert dev["capture"]["recall"] == 1.0
    assert dev["grounding"] == {"violations": 0, "guardStopped": dev["turns"]}
    assert not Tenant.objects.exists()


def test_a_tenants_cases_and_the_failures_they_show(db, tmp_path):
    cases = write(tmp_path, (
        "tenant: Acme\n"
        "cases:\n"
        "- id: wants-a-person\n"
        "  category: human_request\n"
        "  turns: [\"Can I talk to a real person?\"]\n"
        "  expect: {handoff: true}\n"
        "- id: too-hopeful\n"
        "  turns: [\"hello\"]\n"
        "  expect: {handoff: true, capture: {email: nobody@example.org}}\n"), "ours.yaml")
    out = StringIO()
    call_command("eval_agent", "--cases", str(cases), "--verbose", stdout=out)
    text = out.getvalue()
    assert "dev split: 2 conversations, 2 turns" in text
    assert "handoff         precision 1.000  recall 0.500" in text
    assert "too-hopeful" in text and "capture email: expected 'nobody@example.org', got None" in text
    assert "wants-a-person" not in text


def test_the_decisions_are_read_from_what_each_turn_did(db, tmp_path):
    """Through the real turn: a handoff is the person decision, details captured the contact
    one, the intent the others; each language is tallied on its own, the replies' language is
    told from their text."""
    cases = write(tmp_path, (
        "split: test\n"
        "cases:\n"
        "- id: person\n"
        "  language: en\n"
        "  turns: [\"Can I talk to a real person?\"]\n"
        "  expect: {handoff: true, decisions: [person], reply_language: en}\n"
        "- id: contact\n"
        "  language: de\n"
        "  turns: [\"Ich bin Anna Krüger, anna.krueger@beispiel.de\", \"Was kostet das?\"]\n"
        "  expect: {capture: {email: anna.krueger@beispiel.de}, decisions: [contact, pricing],\n"
        "           reply_language: de}\n"))
    summary = evaluate("--cases", str(cases))
    assert list(summary["splits"]) == ["test"]
    test = summary["splits"]["test"]
    assert test["languages"] == ["en", "de"] and test["decisionCases"] == 2
    decisions = test["decisions"]
    assert set(DECISIONS) <= set(decisions)
    # What the turn did and what the decisions say agree, whatever the agent got right.
    handed_off = test["handoff"]["tp"] == 1
    assert decisions["person"]["byLanguage"]["en"]["tp"] == int(handed_off)
    assert decisions["person"]["byLanguage"]["de"] == {
        "precision": None, "recall": None, "tp": 0, "fp": 0, "fn": 0}
    captured = test["capture"]["byLanguage"]["de"]["tp"] + test["capture"]["byLanguage"]["de"]["fp"]
    assert decisions["contact"]["byLanguage"]["de"]["tp"] == int(captured > 0)
    replies = test["replyLanguage"]
    assert replies["replies"] + replies["undetermined"] == test["turns"] == 3
    assert set(replies["byLanguage"]) == {"en", "de"}


# --- the cases files and the splits -------------------------------------------------------------

def test_the_splits_and_each_files_own_setup():
    dev, test = load_cases(splits=["dev"]), load_cases(splits=["test"])
    assert dev.files == SPLIT_FILES["dev"] and test.files == SPLIT_FILES["test"]
    assert {case.split for case in dev.cases} == {"dev"}
    assert {case.split for case in test.cases} == {"test"}
    original = load_cases(DEFAULT_PATH)
    assert len(dev.cases) == len(original.cases) + 239 and len(test.cases) == 239
    assert len(load_cases().cases) == len(dev.cases) + len(test.cases)
    assert {case.tenant for case in original.cases} == {"Northwind Analytics"}
    assert {case.tenant for case in dev.cases} == {"Northwind Analytics", "Corvane"}
    assert {case.tenant for case in test.cases} == {"Corvane"}
    # Each case's passages come from its own file's anchors.
    for case in (*dev.cases, *test.cases):
        domain = "northwind" if case.tenant == "Northwind Analytics" else "corvane"
        urls = {p.url for p in case.setup.knowledge if p.url}
        assert all(f"https://{domain}.example/" in url for url in urls), case.id
    for split in (dev, test):
        new = [case for case in split.cases if case.tenant == "Corvane"]
        assert {case.language for case in new} == set(SPOKEN)
        assert all(case.expect.decisions is not None for case in new)
        assert all(case.expect.reply_language in SPOKEN for case in new)
        counted = {d: sum(d in case.expect.decisions for case in new) for d in DECISIONS}
        assert all(counted[d] >= 7 for d in ("person", "meeting", "contact")), counted
    with pytest.raises(CaseError, match="unknown split 'all'"):
        load_cases(splits=["all"])


def test_the_shipped_cases_cover_every_category_and_language():
    cases = load_cases(DEFAULT_PATH)
    assert len(cases.cases) >= 60
    assert cases.categories >= CATEGORIES
    assert {"en", "de", "fr", "es"} <= {case.language for case in cases.cases}
    by_category = {category: [c for c in cases.cases if c.category == category]
                   for category in CATEGORIES}
    assert all(len(found) >= 3 for found in by_category.values()), {
        k: len(v) for k, v in by_category.items()}
    # The non-requests are there to catch false handoffs: none of them expects one.
    assert not any(c.expect.handoff for c in by_category["non_request"])


def test_a_file_of_ones_own_is_dev_unless_it_says(tmp_path):
    plain = write(tmp_path, "cases: [{id: a, turns: [hi]}]\n", "plain.yaml")
    held = write(tmp_path, "split: test\ncases: [{id: a, turns: [hi]}]\n", "held.yaml")
    assert load_cases(plain).cases[0].split == "dev"
    assert load_cases(held).cases[0].split == "test"


@pytest.mark.parametrize("content, message", [
    ("cases: []", "non-empty list under 'cases'"),
    ("cases: [{id: a, turns: [hi]}, {id: a, turns: [hi]}]", "case 'a' (#2): id: used by an earlier"),
    ("cases: [{id: a}]", "case 'a' (#1): turns: required"),
    ("cases: [{id: a, turns: [hi], expect: {capture: {fax: '1'}}}]",
     "case 'a' (#1): expect.capture.fax: unknown field"),
    ("cases: [{id: b, turns: [hi], expect: {handoff: maybe}}]",
     "case 'b' (#1): expect.handoff: expected true, false or 'any'"),
    ("cases: [{id: c, turns: [hi], setup: {knowledge: [{title: T}]}}]",
     "case 'c' (#1): setup.knowledge[1].text: required"),
    ("cases: [{id: d, turns: ['']}]", "case 'd' (#1): turns[1]: expected a non-empty string"),
    ("cases: [{turns: [hi]}]", "case #1: id: required"),
    ("cases: [{id: e, turns: [hi]}", "not valid YAML"),
    ("cases: [{id: f, turns: [hi], expect: {decisions: [person, callback]}}]",
     "case 'f' (#1): expect.decisions[2]: 'callback' is not a decision"),
    ("cases: [{id: g, turns: [hi], expect: {decisions: person}}]",
     "case 'g' (#1): expect.decisions: expected a list"),
    ("cases: [{id: h, turns: [hi], expect: {decisions: [meeting, meeting]}}]",
     "case 'h' (#1): expect.decisions[2]: 'meeting' is listed twice"),
    ("cases: [{id: i, turns: [hi], expect: {reply_language: english}}]",
     "case 'i' (#1): expect.reply_language: expected an ISO 639-1 code"),
    ("split: holdout\ncases: [{id: j, turns: [hi]}]", "split: expected one of dev, test"),
])
def test_a_bad_cases_file_is_a_clear_error(db, tmp_path, content, message):
    path = write(tmp_path, content, "bad.yaml")
    with pytest.raises(CommandError) as raised:
        call_command("eval_agent", "--cases", str(path), stdout=StringIO())
    assert message in str(raised.value)


def test_a_missing_cases_file_is_a_clear_error(db, tmp_path):
    with pytest.raises(CommandError, match="cannot be read"):
        call_command("eval_agent", "--cases", str(tmp_path / "nope.yaml"), stdout=StringIO())


# --- the decisions of a turn --------------------------------------------------------------------

def test_a_turns_decisions_from_its_acts_and_its_intent():
    handoff = {"reason": "The visitor asked to talk to a person.", "suggestedTeam": "sales"}
    assert turn_decisions(intent="human_request", turn={}, handoff=handoff,
                          offered_meeting=False, captured=[]) == {
        "person": {"intent": "human_request", "handoff": handoff}}
    # A support problem is handed off, but nobody was asked for.
    assert turn_decisions(intent="support", turn={}, handoff=handoff, offered_meeting=False,
                          captured=[]) == {"support": {"intent": "support"}}
    assert turn_decisions(intent="purchase_intent", turn={}, handoff=None, offered_meeting=True,
                          captured=["name", "email"]) == {
        "meeting": {"offered": True}, "contact": {"captured": ["email", "name"]}}
    assert turn_decisions(intent="demo_request", turn={}, handoff=None, offered_meeting=False,
                          captured=[]) == {"meeting": {"intent": "demo_request"}}
    assert turn_decisions(intent="other", turn={}, handoff=None, offered_meeting=False,
                          captured=[]) == {}


def test_a_turns_recorded_decisions_join_its_intent_and_its_acts():
    recorded = {"pricing": {"nearest": "what does it cost", "similarity": 0.81},
                "objection": {"rule": "too expensive"}}
    assert turn_decisions(intent="greeting", turn={"decisions": recorded}, handoff=None,
                          offered_meeting=True, captured=["phone"]) == {
        "pricing": {"recorded": recorded["pricing"]},
        "objection": {"recorded": recorded["objection"]},
        "greeting": {"intent": "greeting"},
        "meeting": {"offered": True}, "contact": {"captured": ["phone"]}}
    assert turn_decisions(intent="human_request", turn={"decisions": {"person": {"p": 0.9}}},
                          handoff={"reason": "asked"}, offered_meeting=False, captured=[]) == {
        "person": {"recorded": {"p": 0.9}, "intent": "human_request",
                   "handoff": {"reason": "asked"}}}


# --- the figures --------------------------------------------------------------------------------

SYNTHETIC = """\
split: test
cases:
- {id: en-person, language: en, turns: [a], expect: {decisions: [person], reply_language: en}}
- {id: en-meeting, language: en, turns: [a, b], expect: {decisions: [meeting, pricing]}}
- {id: en-none, language: en, turns: [a], expect: {decisions: []}}
- {id: it-contact, language: it, turns: [a], expect: {decisions: [contact], reply_language: it,
   capture: {email: [lia@esempio.it], name: Lia Conti}}}
- {id: it-person, language: it, turns: [a], expect: {decisions: [person]}}
- {id: old, language: en, turns: [a]}
"""


def _results(cases_path: Path, took: dict[str, list[dict]], *, replies: dict[str, list[str]],
             captured: dict[str, dict[str, str]]) -> list[CaseResult]:
    """Synthetic results: each case's turns with the decisions ``took`` gives them."""
    results = []
    for case in load_cases(cases_path).cases:
        turns = [TurnResult(message=message, reply=reply, seconds=0.05, stopped=None,
                            offered=False, decisions=decisions)
                 for message, reply, decisions in zip(
                     case.turns, replies.get(case.id, ["" for _ in case.turns]),
                     took.get(case.id, [{} for _ in case.turns]), strict=True)]
        results.append(CaseResult(case=case, turns=turns, captured=captured.get(case.id, {}),
                                  handed_off=False))
    return results


def test_precision_and_recall_per_decision_and_language(tmp_path):
    path = write(tmp_path, SYNTHETIC)
    results = _results(path, {
        "en-person": [{"person": {}}],
        "en-meeting": [{"pricing": {}}, {"meeting": {}, "person": {}}],  # one person too many
        "en-none": [{"greeting": {}}],
        "it-contact": [{"contact": {}}],
        "it-person": [{}],  # missed
        "old": [{"person": {}}],  # without expected decisions: not counted
    }, replies={
        "en-person": ["Of course, someone from our sales team will take over this conversation."],
        "it-contact": ["Thanks, we will be in touch by email very soon."],
    }, captured={"it-contact": {"email": "lia@esempio.it", "name": "Lia", "phone": "+39021234567"}})
    summary = summarize(results, split="test")
    assert summary["split"] == "test" and summary["cases"] == 6 and summary["turns"] == 7
    assert summary["decisionCases"] == 5 and summary["languages"] == ["en", "it"]
    person = summary["decisions"]["person"]
    assert (person["tp"], person["fp"], person["fn"]) == (1, 1, 1)
    assert person["byLanguage"]["en"] == {"precision": 0.5, "recall": 1.0, "tp": 1, "fp": 1,
                                          "fn": 0}
    assert person["byLanguage"]["it"] == {"precision": None, "recall": 0.0, "tp": 0, "fp": 0,
                                          "fn": 1}
    assert summary["decisions"]["meeting"]["byLanguage"]["en"]["recall"] == 1.0
    assert summary["decisions"]["greeting"]["fp"] == 1
    assert summary["decisions"]["contact"]["byLanguage"]["it"]["precision"] == 1.0
    assert summary["decisions"]["support"] == {"precision": None, "recall": None, "tp": 0, "fp": 0,
                                               "fn": 0, "byLanguage": {
        "en": {"precision": None, "recall": None, "tp": 0, "fp": 0, "fn": 0},
        "it": {"precision": None, "recall": None, "tp": 0, "fp": 0, "fn": 0}}}
    # Capture: the email right, the name different, a phone nobody gave.
    assert summary["capture"]["byLanguage"]["it"] == {
        "precision": 0.333, "recall": 0.5, "tp": 1, "fp": 2, "fn": 1}
    assert summary["capture"]["byLanguage"]["en"]["tp"] == 0
    # Reply language: the English reply to an English visitor is right, the English one to an
    # Italian visitor is not; the cases without an expected language count for nothing.
    assert summary["replyLanguage"]["byLanguage"]["en"] == {
        "accuracy": 1.0, "correct": 1, "replies": 1, "undetermined": 0}
    assert summary["replyLanguage"]["byLanguage"]["it"] == {
        "accuracy": 0.0, "correct": 0, "replies": 1, "undetermined": 0}
    problems = {f["case"]: f["problems"] for f in summary["failures"]}
    assert problems["it-person"] == ["decisions: expected [person], took []; missed person"]
    assert problems["en-meeting"] == [
        "decisions: expected [meeting, pricing], took [person, meeting, pricing]; "
        "not asked for person"]
    assert "reply language: reply 1 in en, expected it" in problems["it-contact"]
    assert "old" not in problems


# --- the aims -----------------------------------------------------------------------------------

def _all_right(tmp_path: Path, *, wrong: str | None = None) -> dict:
    """A test split with a person, a meeting and a contact case in every language, all decided
    right, except ``wrong``'s (a case id) decisions, which are left out."""
    lines = ["split: test", "cases:"]
    for language in SPOKEN:
        for decision in ("person", "meeting"):
            lines.append(f"- {{id: {language}-{decision}, language: {language}, turns: [a], "
                         f"expect: {{decisions: [{decision}]}}}}")
        lines.append(f"- {{id: {language}-contact, language: {language}, turns: [a], "
                     "expect: {decisions: [contact], capture: {email: a@b.example}}}")
    path = write(tmp_path, "\n".join(lines) + "\n")
    took = {case.id: [{} if case.id == wrong else {d: {} for d in case.expect.decisions}]
            for case in load_cases(path).cases}
    captured = {case.id: {"email": "a@b.example"} for case in load_cases(path).cases
                if case.expect.capture}
    return summarize(_results(path, took, replies={}, captured=captured), split="test")


def test_the_aims_met_and_missed(tmp_path):
    assert aims_missed(_all_right(tmp_path)) == []
    assert aims_missed(_all_right(tmp_path, wrong="pt-meeting")) == [
        "meeting recall in pt: 0.000 < 0.95"]
    missed = aims_missed(summarize([], split="test"))
    assert len(missed) == len(SPOKEN) * 4
    assert "person in en: not measured (no case expects it, none took it)" in missed


def test_eval_agent_asserts_the_aims_on_the_test_split(db, tmp_path):
    cases = write(tmp_path, (
        "split: test\n"
        "cases:\n"
        "- {id: a, language: en, turns: [\"Can I talk to a real person?\"], "
        "expect: {handoff: true, decisions: [person]}}\n"))
    out = StringIO()
    with pytest.raises(AimsMissed) as raised:
        call_command("eval_agent", "--cases", str(cases), "--assert-aims", stdout=out)
    assert "aims missed on the test split" in str(raised.value)
    assert "person in de: not measured" in str(raised.value)
    assert "Aims (test split):" in out.getvalue()  # the report is printed all the same
    with pytest.raises(CommandError, match="--split dev does not run"):
        call_command("eval_agent", "--split", "dev", "--assert-aims", stdout=StringIO())
    dev = write(tmp_path, "cases: [{id: a, turns: [hi]}]\n", "dev.yaml")
    with pytest.raises(CommandError, match="which this run has no case of"):
        call_command("eval_agent", "--cases", str(dev), "--assert-aims", stdout=StringIO())
