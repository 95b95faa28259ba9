"""The tenant's consent settings (docs/widget.md, "Consent", "Do Not Track"): the notice its
widget's visitors accept, its version, and whether Do Not Track is honoured, through
``/api/v1/settings/consent`` and the dashboard's Settings page. Validation errors name their
field; the version goes up whenever the notice's words or link change, and only then."""

from __future__ import annotations

import pytest

from tests.dashboard.client import signed_in
from tests.dashboard.html import errors_beside, value_of

URL = "/api/v1/settings/consent"
NOTICE = "We keep this chat to answer you. By chatting you accept our privacy policy."
POLICY = "https://acme.test/privacy"
DEFAULTS = {"consentRequired": False, "consentText": "", "consentLink": None,
            "consentVersion": 1, "honourDoNotTrack": False}


def read(api, kit, mode="live"):
    r = api.get(URL, headers=kit.auth("read", mode))
    assert r.status_code == 200, r.content
    return r.json()


def patch(api, kit, body, *, scope="admin", mode="live"):
    return api.patch(URL, json=body, headers=kit.auth(scope, mode))


def details(r) -> dict[str, str]:
    return {d["field"]: d["code"] for d in r.json()["error"]["details"]}


def test_defaults_then_a_required_notice(api, kit, stranger):
    assert read(api, kit) == DEFAULTS
    r = patch(api, kit, {"consentRequired": True, "consentText": f"  {NOTICE}\r\nThanks!  ",
                         "consentLink": POLICY, "honourDoNotTrack": True})
    assert r.status_code == 200, r.content
    # Trimmed, its line breaks kept as LF; the first notice written keeps version 1: nobody
    # could have accepted the blank one.
    saved = {"consentRequired": True, "consentText": f"{NOTICE}\nThanks!", "consentLink": POLICY,
             "consentVersion": 1, "honourDoNotTrack": True}
    assert r.json() == saved
    assert read(api, kit) == saved
    # A setting of the tenant, not of a mode: the test keys see the same; the stranger is apart.
    assert read(api, kit, mode="test") == saved
    assert read(api, stranger) == DEFAULTS


def test_the_version_goes_up_when_the_words_or_the_link_change(api, kit):
    patch(api, kit, {"consentRequired": True, "consentText": NOTICE})
    assert read(api, kit)["consentVersion"] == 1
    steps = [
        ({"consentLink": POLICY}, 2),  # a link added: the notice changed
        ({"consentText": NOTICE + " "}, 2),  # the same words once trimmed
        ({"consentRequired": False}, 2),  # turning it off or on changes no words
        ({"consentRequired": True, "honourDoNotTrack": True}, 2),
        ({"consentText": "Other words."}, 3),
        ({"consentLink": None}, 4),  # the link removed
        ({"consentLink": ""}, 4),  # null and "" are both no link
        ({"consentVersion": 99}, 4),  # read-only: ignored
    ]
    for body, version in steps:
        r = patch(api, kit, body)
        assert r.status_code == 200, (body, r.content)
        assert r.json()["consentVersion"] == version, body
    # Cleared while not required, then written again: a new version, as visitors who accepted
    # "Other words." have not seen the new ones.
    patch(api, kit, {"consentRequired": False, "consentText": ""})
    assert read(api, kit)["consentVersion"] == 5
    assert patch(api, kit, {"consentText": "New words."}).json()["consentVersion"] == 5


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"consentRequired": True}, "consentText", "required"),
    ({"consentRequired": True, "consentText": "   "}, "consentText", "required"),
    ({"consentText": "x" * 501}, "consentText", "too_long"),
    ({"consentText": "Tabs\tare not text"}, "consentText", "invalid_format"),
    ({"consentText": "A bell\x07"}, "consentText", "invalid_format"),
    ({"consentLink": "http://acme.test/privacy"}, "consentLink", "invalid_format"),
    ({"consentLink": "javascript:alert(1)"}, "consentLink", "invalid_format"),
    ({"consentLink": "https://"}, "consentLink", "invalid_format"),
    ({"consentLink": "https://acme.test/pri\u0001vacy"}, "consentLink", "invalid_format"),
    ({"consentLink": "https://acme.test/" + "p" * 500}, "consentLink", "too_long"),
])
def test_a_refused_change_names_its_field_and_saves_nothing(api, kit, body, field, code):
    r = patch(api, kit, {"honourDoNotTrack": True, **body})
    assert r.status_code == 422, r.content
    assert r.json()["error"]["code"] == "unprocessable"
    assert details(r) == {field: code}
    assert read(api, kit) == DEFAULTS  # not even the valid field


@pytest.mark.parametrize(("body", "field"), [
    ({"consentRequired": "yes"}, "consentRequired"),
    ({"consentText": 5}, "consentText"),
    ({"consentLink": ["https://acme.test"]}, "consentLink"),
    ({"honourDoNotTrack": 1}, "honourDoNotTrack"),
])
def test_a_value_of_the_wrong_type_is_a_400_naming_it(api, kit, body, field):
    r = patch(api, kit, body)
    assert r.status_code == 400, r.content
    assert details(r) == {field: "invalid_format"}
    assert read(api, kit) == DEFAULTS


def test_changing_needs_the_admin_scope(api, kit):
    for scope in ("read", "write"):
        r = patch(api, kit, {"consentRequired": True, "consentText": NOTICE}, scope=scope)
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert read(api, kit) == DEFAULTS
    assert api.get(URL).status_code == 401


# --- the dashboard's Settings page ----------------------------------------------------------------

FORM = "/dashboard/settings/consent/"


def test_the_settings_page_saves_the_notice(kit, manager):
    client = signed_in(manager)
    r = client.post(FORM, {"consent_required": "on", "consent_text": f"{NOTICE}\r\nThanks!",
                           "consent_link": "acme.test/privacy", "honour_do_not_track": "on"},
                    follow=True)
    assert r.status_code == 200 and "Consent settings saved" in r.content.decode()
    kit.tenant.refresh_from_db()
    assert (kit.tenant.consent_required, kit.tenant.consent_text, kit.tenant.consent_link,
            kit.tenant.honour_do_not_track) == (True, f"{NOTICE}\nThanks!", POLICY, True)
    assert value_of(r.content, "id_consent_text").strip() == f"{NOTICE}\nThanks!"
    assert "Notice version 1" in r.content.decode()
    # New words: version 2, shown on the page.
    r = client.post(FORM, {"consent_required": "on", "consent_text": "Other words.",
                           "consent_link": POLICY}, follow=True)
    assert "Notice version 2" in r.content.decode()
    kit.tenant.refresh_from_db()
    assert (kit.tenant.consent_version, kit.tenant.honour_do_not_track) == (2, False)


def test_the_settings_page_shows_a_refusal_beside_its_field(kit, manager):
    client = signed_in(manager)
    r = client.post(FORM, {"consent_required": "on", "consent_text": "",
                           "consent_link": "http://acme.test/privacy"})
    assert r.status_code == 400
    assert errors_beside(r.content, "id_consent_text") == [
        "The notice visitors accept: required while consent is."]
    assert errors_beside(r.content, "id_consent_link") == [
        "An https:// address: the page of your privacy policy."]
    assert value_of(r.content, "id_consent_link") == "http://acme.test/privacy"  # kept
    kit.tenant.refresh_from_db()
    assert kit.tenant.consent_required is False
