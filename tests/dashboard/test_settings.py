"""The settings page over HTTP: the widget's colours warn, with a preview, when the text on the
main colour is under WCAG's 4.5:1 (and are saved only once confirmed), and refused allowed
origins come back in the box with each one's reason beside it; the contrast arithmetic against
WCAG's own figures."""

from __future__ import annotations

import pytest

from tenants.services import tenant_set_agent
from tests.dashboard.client import signed_in
from tests.dashboard.html import beside, errors_beside, value_of
from widget import colours
from widget.services import widget_look

WIDGET = {"title": "Talk to Acme", "greeting": "Hello!", "position": "bottom-right",
          "launcher_icon": "chat"}


@pytest.mark.parametrize(("first", "second", "ratio"), [
    ("#000000", "#ffffff", "21.00:1"),
    ("#ffffff", "#ffffff", "1.00:1"),
    ("#2563eb", "#ffffff", "5.16:1"),  # the widget's default pair (5.17 rounded: shown rounded down)
    ("#777777", "#ffffff", "4.47:1"),  # the grey WCAG's examples use: just under
    ("#ffff00", "#ffffff", "1.07:1"),
])
def test_contrast_ratios_are_wcags(first, second, ratio):
    assert colours.shown_ratio(colours.contrast_ratio(first, second)) == ratio
    assert colours.contrast_ratio(first, second) == colours.contrast_ratio(second, first)


def test_a_low_contrast_theme_is_saved_only_once_confirmed_after_a_preview(kit, manager):
    """Issue 29: the warning came, but the unreadable colours were saved anyway. Now the form
    comes back with the pair previewed as the widget draws it and a box to save them anyway;
    only then are they saved, and the warning stays beside them."""
    client = signed_in(manager)
    page = client.get("/dashboard/settings/")
    assert b"contrast-warning" not in page.content  # the default blue under white: 5.16:1

    yellow = {**WIDGET, "primary_color": "#ffff00", "text_color": "#ffffff"}
    r = client.post("/dashboard/settings/widget/", yellow)
    assert r.status_code == 400
    look = widget_look(tenant=kit.tenant)
    assert (look.primary_color, look.text_color) == ("#2563eb", "#ffffff")  # nothing saved
    warning = beside_colours(r.content)
    assert "Low contrast: 1.07:1" in warning and "at least 4.5:1" in warning
    assert errors_beside(r.content, "id_accept_low_contrast") == [
        "The text is hard to read on this main colour (see the preview): tick the box to save "
        "them anyway, or choose other colours."]
    assert value_of(r.content, "id_primary_color") == "#ffff00"  # what was typed, kept
    preview = preview_of(r.content)
    assert preview == {"Talk to Acme": "background:#ffff00;color:#ffffff",
                       "Hi, can I book a demo?": "background:#ffff00;color:#ffffff",
                       "": "background:#ffff00;color:#ffffff"}  # the launcher's icon

    r = client.post("/dashboard/settings/widget/", {**yellow, "accept_low_contrast": "on"},
                    follow=True)
    assert r.status_code == 200 and "Widget saved" in r.content.decode()
    look = widget_look(tenant=kit.tenant)
    assert (look.primary_color, look.text_color) == ("#ffff00", "#ffffff")
    # It stays while the colours are poor, every time the page is shown...
    assert "Low contrast: 1.07:1" in beside_colours(client.get("/dashboard/settings/").content)
    # ...the pair saved needs no second confirmation when something else changes...
    r = client.post("/dashboard/settings/widget/", {**yellow, "title": "Chat with Acme"})
    assert r.status_code == 302 and widget_look(tenant=kit.tenant).title == "Chat with Acme"
    # ...another poor pair does...
    r = client.post("/dashboard/settings/widget/", {**yellow, "primary_color": "#eeeeee"})
    assert r.status_code == 400 and widget_look(tenant=kit.tenant).primary_color == "#ffff00"
    # ...and it goes once they are readable.
    client.post("/dashboard/settings/widget/", {**WIDGET, "primary_color": "#1d4ed8",
                                                "text_color": "#ffffff"})
    assert b"contrast-warning" not in client.get("/dashboard/settings/").content


def preview_of(content: bytes) -> dict[str, str]:
    """Each part of the preview, its text and its colours."""
    from tests.dashboard.html import page

    (preview,) = page(content).xpath("//*[@id='contrast-warning']//*[@id='contrast-preview']")
    return {part.text_content().strip(): part.get("style") for part in preview.xpath("./span")}


def test_the_warning_follows_the_text_colour_the_widget_uses(kit, manager):
    """Dark text on a light main colour is readable: the pair is what counts."""
    client = signed_in(manager)
    client.post("/dashboard/settings/widget/", {**WIDGET, "primary_color": "#ffff00",
                                                "text_color": "#111827"})
    assert b"contrast-warning" not in client.get("/dashboard/settings/").content
    client.post("/dashboard/settings/widget/", {**WIDGET, "primary_color": "#1d4ed8",
                                                "text_color": "#111827",
                                                "accept_low_contrast": "on"})
    assert "Low contrast: 2.64:1" in beside_colours(client.get("/dashboard/settings/").content)


def beside_colours(content: bytes) -> str:
    """The warning, found in the widget's form, after the colour fields."""
    from tests.dashboard.html import page

    (form,) = page(content).xpath("//form[.//*[@id='id_primary_color']]")
    (warning,) = form.xpath(".//*[@id='contrast-warning']")
    inputs = form.xpath(".//*[@aria-describedby='contrast-warning']")
    assert {i.get("id") for i in inputs} == {"id_primary_color", "id_text_color"}
    return " ".join(warning.text_content().split())


def test_refused_origins_stay_in_the_box_with_each_reason_beside_it(kit, manager):
    client = signed_in(manager)
    client.post("/dashboard/settings/origins/", {"origins": "https://shop.acme.com"})
    typed = ("https://www.acme.com\nshop.acme.com\nhttps://acme.com/pricing\n"
             "https://acme.com:99999\nftp://files.acme.com")
    r = client.post("/dashboard/settings/origins/", {"origins": typed})
    assert r.status_code == 400
    assert value_of(r.content, "id_origins").strip() == typed
    assert errors_beside(r.content, "id_origins") == [
        "shop.acme.com: add the scheme, as in https://shop.acme.com.",
        "https://acme.com/pricing: remove the path (/pricing): an origin ends after the host and "
        "port.",
        "https://acme.com:99999: the port must be a number up to 65535.",
        "ftp://files.acme.com: the scheme must be http or https, not ftp.",
    ]
    assert "Sites that may embed the widget" in beside(r.content, "id_origins")
    kit.tenant.refresh_from_db()
    assert kit.tenant.allowed_origins == ["https://shop.acme.com"]  # nothing saved


def test_a_form_refused_by_its_own_checks_keeps_the_input(kit, manager):
    r = signed_in(manager).post("/dashboard/settings/widget/", {
        **WIDGET, "title": "", "primary_color": "#ffff00", "text_color": "#ffffff"})
    assert r.status_code == 400
    assert errors_beside(r.content, "id_title") == ["This field is required."]
    assert value_of(r.content, "id_primary_color") == "#ffff00"
    assert "Low contrast: 1.07:1" in beside_colours(r.content)  # what was typed, not saved
    assert widget_look(tenant=kit.tenant).primary_color == "#2563eb"


def test_the_provider_has_its_own_line_and_the_builtin_agent_shows_no_model(kit, manager):
    """Issue 29: the provider's select was cut off ("Built-in offline a…") beside the model
    field, which showed "gpt-4o-mini" for the built-in agent. The provider takes the form's
    width; the OpenAI-compatible provider's fields are folded away under a line saying the
    built-in agent uses none of them (and still sent, so nothing stored is lost)."""
    from tests.dashboard.html import page

    client = signed_in(manager)
    form = page(client.get("/dashboard/settings/").content).xpath("//section[@id='agent']//form")[0]
    (provider,) = form.xpath(".//*[contains(@class, 'field')][.//select[@id='id_provider']]")
    assert provider.getparent().tag == "form"  # not squeezed into a row beside another field
    (folded,) = form.xpath(".//details[@id='openai-settings']")
    assert folded.get("open") is None
    assert "not used by the built-in agent" in folded.xpath("./summary")[0].text_content()
    assert folded.xpath(".//input[@id='id_model']")[0].get("value") == "gpt-4o-mini"
    # Saved with the built-in agent, the folded fields keep what is stored.
    r = client.post("/dashboard/settings/agent/", {"provider": "builtin", "model": "gpt-4o-mini",
                                                   "base_url": "", "api_key": "",
                                                   "embeddings": "local", "embedding_model": ""})
    assert r.status_code == 302
    kit.tenant.refresh_from_db()
    assert (kit.tenant.agent_provider, kit.tenant.agent_model) == ("builtin", "gpt-4o-mini")
    # With the OpenAI-compatible provider they are open, with no such line.
    tenant_set_agent(tenant=kit.tenant, provider="openai")
    form = page(client.get("/dashboard/settings/").content).xpath("//section[@id='agent']//form")[0]
    (folded,) = form.xpath(".//details[@id='openai-settings']")
    assert folded.get("open") is not None
    assert "not used" not in folded.xpath("./summary")[0].text_content()
