"""The builtin agent's fixed sentences (agent/phrases.py): every one in every language the agent
speaks (core.languages.SPOKEN), with the same placeholders, and the words it asks a visitor to
type understood in that language."""

import re
from string import Formatter

import pytest

from agent import rules
from agent.interface import BUILTIN_LANGUAGES
from agent.phrases import PHRASES, phrase
from core.languages import SPOKEN


def _placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in Formatter().parse(text) if field is not None}


def test_the_agent_speaks_every_spoken_language_and_no_other():
    assert BUILTIN_LANGUAGES == SPOKEN
    assert set(PHRASES) == set(SPOKEN)


@pytest.mark.parametrize("language", SPOKEN)
def test_every_sentence_exists_in_each_language_with_the_same_placeholders(language):
    english = PHRASES["en"]
    table = PHRASES[language]
    assert set(table) == set(english), set(table) ^ set(english)
    for key, text in english.items():
        assert text.strip() and table[key].strip(), key
        assert _placeholders(table[key]) == _placeholders(text), key


@pytest.mark.parametrize("language", [code for code in SPOKEN if code != "en"])
def test_each_language_has_its_own_sentences(language):
    # Only the joining word and the quotes around a title may read as in English.
    same = {key for key, text in PHRASES[language].items() if text == PHRASES["en"][key]}
    assert same <= {"title", "answer"}, same


def test_another_language_reads_english():
    assert phrase("ja", "greeting", tenant="Acme") == phrase("en", "greeting", tenant="Acme")


@pytest.mark.parametrize("language", SPOKEN)
def test_the_words_the_agent_suggests_typing_ask_for_a_meeting(language):
    """"Just say 'book a call'": what the pricing reply tells the visitor to write is read as a
    wish for a meeting in the same language."""
    quoted = re.findall(r"[\"„«‘“]\s?([^\"“”»’]+?)\s?[\"“”»’]", phrase(language, "pricing_call"))
    assert len(quoted) == 1, quoted
    assert rules.classify(quoted[0])[0] == "demo_request"
