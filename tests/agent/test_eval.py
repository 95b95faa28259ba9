"""The sales evaluation (manage.py eval_agent, docs/agent.md "Evaluation"): the builtin agent
meets its bar, the OpenAI provider runs through it, a tenant's broken cases file is a clear
error, and nothing of a run is left behind."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agent.eval.cases import load_cases
from conversations.models import Conversation
from knowledge.models import Document
from leads.models import Lead
from tenants.models import Tenant

CATEGORIES = {"contact", "human_request", "support", "non_request", "demo", "pricing",
              "objection", "injection"}


def evaluate(*args) -> dict:
    out = StringIO()
    call_command("eval_agent", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_builtin_agent_meets_the_bar_and_leaves_nothing_behind(db):
    before = Tenant.objects.count()
    summary = evaluate("--provider", "builtin")
    assert summary["cases"] >= 60
    for metric in ("capture", "handoff"):
        assert summary[metric]["precision"] >= 0.95, summary[metric]
        assert summary[metric]["recall"] >= 0.95, summary[metric]
    assert summary["grounding"]["violations"] == 0
    assert summary["turnSeconds"]["median"] > 0 and summary["replyChars"]["max"] > 0
    assert Tenant.objects.count() == before
    assert not Conversation.objects.exists() and not Lead.objects.exists()
    assert not Document.objects.exists()


def test_the_openai_provider_against_the_fake_server(db, fake_server, tmp_path):
    fake_server.reset()
    fake_server.reply = "Sure! Our plans start at $29 per month. Anything else?"
    summary = evaluate("--provider", "openai", "--base-url", fake_server.base_url,
                       "--model", "fake-model", "--cases", str(_small_cases(tmp_path)))
    assert summary["agent"] == {"provider": "openai", "model": "fake-model",
                                "baseUrl": fake_server.base_url}
    assert fake_server.analysis_requests() and fake_server.reply_requests()
    # The model understands nothing; the deterministic net still captures the details, and the
    # guard cuts every invented price, which the independent check confirms.
    assert summary["capture"]["recall"] == 1.0
    assert summary["grounding"] == {"violations": 0, "guardStopped": summary["turns"]}
    assert not Tenant.objects.exists()


def _small_cases(directory):
    path = directory / "cases.yaml"
    path.write_text(
        "cases:\n"
        "- id: contact\n"
        "  turns: [\"I'm Dana from Northwind, dana@northwind.example\"]\n"
        "  expect: {capture: {name: Dana, company: Northwind, email: dana@northwind.example}}\n"
        "- id: pricing\n"
        "  setup: {knowledge: [{title: Pricing, text: Starter costs $49 per seat.}]}\n"
        "  turns: [\"How much is it?\"]\n", encoding="utf-8")
    return path


def test_a_tenants_cases_and_the_failures_they_show(db, tmp_path):
    cases = tmp_path / "ours.yaml"
    cases.write_text(
        "tenant: Acme\n"
        "cases:\n"
        "- id: wants-a-person\n"
        "  category: human_request\n"
        "  turns: [\"Can I talk to a real person?\"]\n"
        "  expect: {handoff: true}\n"
        "- id: too-hopeful\n"
        "  turns: [\"hello\"]\n"
        "  expect: {handoff: true, capture: {email: nobody@example.org}}\n", encoding="utf-8")
    out = StringIO()
    call_command("eval_agent", "--cases", str(cases), "--verbose", stdout=out)
    text = out.getvalue()
    assert "2 conversations, 2 turns" in text
    assert "handoff         precision 1.000  recall 0.500" in text
    assert "too-hopeful" in text and "capture email: expected 'nobody@example.org', got None" in text
    assert "wants-a-person" not in text


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
])
def test_a_bad_cases_file_is_a_clear_error(db, tmp_path, content, message):
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CommandError) as raised:
        call_command("eval_agent", "--cases", str(path), stdout=StringIO())
    assert message in str(raised.value)


def test_a_missing_cases_file_is_a_clear_error(db, tmp_path):
    with pytest.raises(CommandError, match="cannot be read"):
        call_command("eval_agent", "--cases", str(tmp_path / "nope.yaml"), stdout=StringIO())


def test_the_shipped_cases_cover_every_category_and_language():
    cases = load_cases()
    assert len(cases.cases) >= 60
    assert cases.categories >= CATEGORIES
    assert {"en", "de", "fr", "es"} <= {case.language for case in cases.cases}
    by_category = {category: [c for c in cases.cases if c.category == category]
                   for category in CATEGORIES}
    assert all(len(found) >= 3 for found in by_category.values()), {
        k: len(v) for k, v in by_category.items()}
    # The non-requests are there to catch false handoffs: none of them expects one.
    assert not any(c.expect.handoff for c in by_category["non_request"])
