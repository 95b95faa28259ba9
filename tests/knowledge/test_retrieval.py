"""Retrieval, the one interface the agent uses, over the index of whichever database runs the
tests (PostgreSQL full-text search or SQLite FTS5): ranking, scoping, and hostile queries."""

from __future__ import annotations

import pytest

from core import embeddings
from knowledge import index, services
from knowledge.models import Document, DocumentStatus
from knowledge.retrieval import EXCERPT_CHARS, retrieve
from tests.knowledge_helpers import index_pending


def _doc(kit, title, text, *, type="text", mode="live", **extra) -> Document:
    document = services.document_create(tenant=kit.tenant, livemode=mode == "live", title=title,
                                        type=type, data=text.encode(), **extra)
    index_pending()
    document.refresh_from_db()
    assert document.status == DocumentStatus.READY, document.failure_reason
    return document


def _ask(kit, query, mode="live", **kwargs):
    return retrieve(tenant=kit.tenant, livemode=mode == "live", query=query, **kwargs)


@pytest.fixture
def handbook(kit):
    faq = _doc(kit, "FAQ", "Q: Is there a free trial?\nA: Yes, every plan starts with a 14-day "
               "free trial, no credit card needed.\n\nQ: Can I cancel at any time?\nA: Yes, cancel "
               "from the billing page; you keep access until the end of the period.", type="faq")
    guide = _doc(kit, "Install guide", "# Installing the widget\n\nPaste the script tag before "
                 "the closing body tag. The widget loads asynchronously.\n\n# Languages\n\nThe "
                 "widget speaks English, German, French and Spanish.", type="markdown",
                 url="https://acme.example/install")
    return faq, guide


def test_the_best_passage_comes_first_with_id_title_excerpt_and_url(kit, handbook):
    faq, guide = handbook
    [best, *_] = _ask(kit, "How do I install the widget on my site?")
    assert best.document_id == guide.pk and best.title == "Install guide"
    assert best.excerpt.startswith("Paste the script tag") and best.url == "https://acme.example/install"
    [trial, *_] = _ask(kit, "Do you offer a free trial?")
    assert trial.document_id == faq.pk and "14-day free trial" in trial.excerpt and trial.url is None
    assert trial.score > 0
    [languages, *_] = _ask(kit, "Which languages does it speak?")
    assert "German" in languages.excerpt


def test_a_rare_word_outweighs_a_common_one(kit):
    _doc(kit, "Widget overview", "The widget is a widget. Widget widget widget, the widget again.")
    for n in range(4):
        _doc(kit, f"Widget note {n}", f"The widget shows note {n} to visitors.")
    refunds = _doc(kit, "Refunds", "Refunds for the widget are paid within five days.")
    [best, *_] = _ask(kit, "widget refund")
    assert best.document_id == refunds.pk


def test_three_or_more_words_need_two_of_them_in_one_passage_in_the_full_text_half(kit):
    _doc(kit, "Team", "Every team gets a shared inbox.")

    def lexical(query):
        return index.search(tenant=kit.tenant, livemode=True, query=query, limit=5)

    assert lexical("team dashboard export options") == []
    assert len(lexical("team inbox export options")) == 1


def test_questions_made_only_of_filler_find_nothing(kit, handbook):
    for query in ("", "   ", "Hi! Can you tell me something?", "ok thanks", "?!", "a b c"):
        assert _ask(kit, query) == []


@pytest.mark.parametrize("query", [
    'widget" OR "x', "widget AND NOT trial", "(widget) | trial & !cancel", "widget*", "w:*",
    "widget NEAR(trial)", "it's the widget's 'quote'", "back\\slash widget\\", "^widget {trial}",
    "widget -- ; DROP TABLE knowledge_chunk; --", "\x00widget", "ünïcödé wïdgét", "😀 widget 😀",
    "widget " * 500,
])
def test_hostile_or_odd_queries_are_just_words(kit, handbook, query):
    passages = _ask(kit, query)
    assert isinstance(passages, list)
    assert Document.objects.count() == 2


def test_only_ready_documents_of_the_tenant_and_mode_are_seen(kit, stranger, handbook):
    faq, _ = handbook
    _doc(kit, "Test-mode trial", "The free trial in test mode lasts forever.", mode="test")
    _doc(stranger, "Stranger trial", "Our free trial lasts 90 days.")
    assert {p.document_id for p in _ask(kit, "free trial")} == {faq.pk}
    [test_passage] = _ask(kit, "free trial", mode="test")
    assert test_passage.title == "Test-mode trial"
    assert [p.title for p in retrieve(tenant=stranger.tenant, livemode=True, query="free trial")] == [
        "Stranger trial"]
    # A document that is not ready (being indexed again, say) is not used.
    Document.objects.filter(pk=faq.pk).update(status=DocumentStatus.PROCESSING)
    assert _ask(kit, "free trial") == []


def test_a_document_gives_at_most_two_passages(kit):
    paragraphs = "\n\n".join(f"Section {n}. " + "The pricing of seats is explained here. " * 18
                             for n in range(5))
    _doc(kit, "Pricing", paragraphs)
    other = _doc(kit, "Other", "Seats pricing for nonprofits is halved.")
    passages = _ask(kit, "seat pricing", limit=3)
    assert len(passages) == 3
    assert [p.title for p in passages].count("Pricing") == 2
    assert other.pk in {p.document_id for p in passages}


def test_a_long_passage_is_quoted_around_the_words_that_matched(kit):
    filler = "This sentence is about something else entirely. " * 12
    _doc(kit, "Manual", filler + "Backups run every night at two o'clock. " + filler)
    [passage] = _ask(kit, "When do backups run?")
    assert len(passage.excerpt) <= EXCERPT_CHARS
    assert "Backups run every night" in passage.excerpt


def test_documents_in_several_languages_are_each_matched_in_their_own_first(kit):
    german = _doc(kit, "Handbuch", "Die Installation des Widgets dauert nur fünf Minuten.",
                  language="de")
    english = _doc(kit, "Handbook", "Installing the widget takes five minutes.", language="en")
    assert german.search_config in ("german", "simple") and english.search_config in ("english", "simple")
    assert _ask(kit, "Wie lange dauert die Installation?")[0].document_id == german.pk
    assert _ask(kit, "How long does installing take?")[0].document_id == english.pk


def test_a_question_finds_a_passage_in_another_language_by_meaning(kit):
    english = _doc(kit, "Security", "All customer data is encrypted at rest with AES-256 and stored "
                   "in data centres in Frankfurt.", language="en")
    _doc(kit, "Billing", "Invoices are sent on the first day of every month.", language="en")
    for question in ("Wo werden unsere Daten gespeichert?", "Où sont stockées nos données ?",
                     "¿Dónde se guardan nuestros datos?"):
        first, *others = _ask(kit, question)
        assert first.document_id == english.pk, question
        assert all(first.similarity > other.similarity for other in others), question


def test_a_question_in_other_words_finds_the_passage_that_answers_it(kit):
    retention = _doc(kit, "Cancellation", "After a subscription ends, workspace content is kept "
                     "for 30 days and then permanently deleted.")
    _doc(kit, "Widget", "The chat widget loads asynchronously and never slows the page.")
    [first, *_] = _ask(kit, "what happens to my stuff if i stop paying?")
    assert first.document_id == retention.pk


def test_nothing_to_retrieve_without_documents(kit):
    assert _ask(kit, "How much does it cost?") == []
    assert _ask(kit, "pricing", limit=0) == []


def test_a_question_is_embedded_only_for_a_tenant_with_vectors(kit, monkeypatch):
    # The real model runs; the spy only counts what it is asked to embed.
    asked = []
    real = embeddings.encode
    monkeypatch.setattr(embeddings, "encode", lambda texts: asked.append(list(texts)) or real(texts))
    question = "Where are the nightly backups kept?"
    assert _ask(kit, question) == []
    assert asked == []  # no vectors in this mode: nothing to compare the question with
    _doc(kit, "Backups", "Nightly backups are kept in Frankfurt for 35 days.")
    asked.clear()
    assert _ask(kit, question)
    assert [question] in asked


def test_a_sentence_longer_than_the_excerpt_is_cut_at_a_word(kit):
    words = " ".join(["backups", "run", "nightly", "and", "weekly"] * 20)
    _doc(kit, "Manual", words)
    [passage] = _ask(kit, "When do backups run?", excerpt_chars=50)
    assert passage.excerpt == "backups run nightly and weekly backups run…"
