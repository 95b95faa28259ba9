"""The widget in the visitor's language (docs/widget.md, "Languages", issue 29): the string
tables, the language the configuration picks from the ``language`` parameter (the widget's
option, then the browser's languages), and the service's own notices following the language the
widget shows. The widget itself is tested in Chromium in test_browser_languages.py."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from agent.phrases import PHRASES, phrase
from conversations import live
from conversations.models import Conversation, ConversationStatus
from core.languages import SPOKEN
from widget.services import widget_settings_update
from widget.strings import DEFAULTS, STRINGS, widget_language

WIDGET_JS = (settings.BASE_DIR / "static" / "widget" / "widget.js").read_text()


def inline_english() -> dict[str, str]:
    """widget.js's ``L`` table, read from the source."""
    block = re.search(r"var L = \{(.*?)\n  \};", WIDGET_JS, re.S).group(1)
    return {k: v.encode().decode("unicode_escape").encode("latin-1").decode()
            for k, v in re.findall(r'(\w+): "((?:[^"\\]|\\.)*)"', block)}


def test_the_widgets_english_is_the_servers():
    assert inline_english() == STRINGS["en"]


@pytest.mark.parametrize("language", SPOKEN)
def test_every_language_has_every_key_and_its_placeholders(language):
    assert set(STRINGS) == set(SPOKEN) == set(DEFAULTS)
    table = STRINGS[language]
    assert set(table) == set(STRINGS["en"])
    for key, english in STRINGS["en"].items():
        assert ("{n}" in table[key]) == ("{n}" in english), (language, key)
        assert table[key].strip(), (language, key)
    if language != "en":  # written, not copied
        same = [k for k in table if table[k] == STRINGS["en"][k] and len(table[k]) > 8]
        assert same == ([] if language != "fr" else ["log"]), (language, same)  # Conversation


def test_every_key_the_widget_uses_is_in_the_table():
    used = set(re.findall(r'\bt\("(\w+)"', WIDGET_JS)) | set(re.findall(r'tr\([^,]+, "(\w+)"', WIDGET_JS))
    used |= set(re.findall(r'notice\("(\w+)"', WIDGET_JS))
    assert used and used <= set(STRINGS["en"]), used - set(STRINGS["en"])


@pytest.mark.parametrize("asked, language", [
    ("de", "de"), ("de-AT", "de"), ("pt-BR", "pt"), ("PT_br", "pt"), ("nl-BE,en", "nl"),
    ("ja,fr-CA,en-US", "fr"),  # the option names one it does not speak: the browser's next
    ("", "en"), (None, "en"), ("ja", "en"), ("zz-!!,es", "es"), ("it;q=0.9", "en"),
    (",".join(["ja"] * 10 + ["de"]), "en"),  # ten tags at most
])
def test_the_language_picked(asked, language):
    assert widget_language(asked) == language


def test_the_configuration_brings_the_words_in_the_visitors_language(api, kit):
    url = f"/api/widget?tenant={kit.tenant.public_id}"
    r = api.get(url + "&language=de-AT,en")
    body = r.json()
    assert r.status_code == 200 and body["language"] == "de"
    assert body["strings"] == STRINGS["de"] and body["strings"]["ph"] == "Nachricht eingeben…"
    # The widget's default title and greeting are its words too...
    assert (body["title"], body["greeting"]) == DEFAULTS["de"]
    assert api.get(url + "&language=pt-BR").json()["strings"]["accept"] == "Aceitar"
    assert api.get(url).json()["language"] == "en"
    # ...a tenant's own are its own.
    widget_settings_update(tenant=kit.tenant, title="Acme hilft", greeting="Moin!",
                           position="bottom-right", primary_color="#2563eb",
                           text_color="#ffffff")
    body = api.get(url + "&language=fr").json()
    assert (body["title"], body["greeting"], body["language"]) == ("Acme hilft", "Moin!", "fr")
    r = api.get(url + "&language=" + "x" * 201)
    assert r.status_code == 400 and r.json()["error"].startswith("language")


def widget_chat(api, kit, message, **metadata):
    return api.post(f"/api/chat?tenant={kit.tenant.public_id}",
                    json={"message": message, "visitorId": "v_lang", "metadata": metadata})


def test_the_services_words_follow_the_widgets_language(api, kit):
    """A first message that tells no language ("ok") is answered, and later notices given, in
    the language the widget shows; the conversation's own language, once told, wins."""
    r = widget_chat(api, kit, "ok", widgetLanguage="fr")
    assert r.status_code == 200, r.text
    english = widget_chat(api, kit, "ok").json()["content"]
    french = {text for text in PHRASES["fr"].values() if "{" not in text}
    assert r.json()["content"] in french and english in PHRASES["en"].values()
    conversation = Conversation.objects.get(pk=r.json()["sessionId"])
    assert conversation.metadata["widgetLanguage"] == "fr" and conversation.language == ""
    conversation.status = ConversationStatus.HANDED_OFF
    conversation.save()
    conversation = Conversation.objects.select_related("tenant", "assigned_to").get(pk=conversation.pk)
    notice = live.status_payload(conversation)["notice"]
    assert notice == phrase("fr", "notice_someone_will_reply", when="")
    conversation.language = "nl"
    assert live.status_payload(conversation)["notice"] == phrase("nl", "notice_someone_will_reply",
                                                                 when="")
    # A language the agent does not speak is not kept.
    r = widget_chat(api, kit, "ok", widgetLanguage="ja")
    assert "widgetLanguage" not in Conversation.objects.get(pk=r.json()["sessionId"]).metadata


@pytest.mark.parametrize("language, hello", [("fr", "Bonjour"), ("de", "Hallo"), ("es", "Hola")])
def test_the_first_suggested_replies_are_in_the_conversations_language(api, kit, language, hello):
    """The greeting's buttons (the service's words) in the visitor's language, and each sends a
    message the agent understands in it."""
    r = widget_chat(api, kit, hello, widgetLanguage=language)
    actions = r.json()["suggestedActions"]
    assert [a["label"] for a in actions] == [
        phrase(language, f"action_{name}") for name in ("pricing", "demo", "person")]
    pricing = api.post(f"/api/chat?tenant={kit.tenant.public_id}", json={
        "message": actions[0]["message"], "visitorId": "v_lang", "sessionId": r.json()["sessionId"]})
    assert pricing.json()["intent"] == "pricing", pricing.json()
    person = api.post(f"/api/chat?tenant={kit.tenant.public_id}", json={
        "message": actions[2]["message"], "visitorId": "v_lang", "sessionId": r.json()["sessionId"]})
    assert person.json()["handoff"], person.json()
