"""The widget in the visitor's language and its launcher, in headless Chromium on a customer's
page (another origin) against a real daphne, at desktop and phone sizes (docs/widget.md,
"Languages", "Launcher"; issue 29):

- the language from the ``data-language`` option, over the browser's;
- else from the browser's languages (Playwright's ``locale``), a regional tag read as its base;
- switched by ``ServiceWidget.update({language})`` at once, the open panel included;
- the launcher's icon and label from the dashboard's Settings (saved there in the browser, a
  launcher with neither refused beside the field), overridden by ``data-*`` attributes and by
  ``update()``.

Screenshots with ``SCREENSHOTS=1``."""

from __future__ import annotations

import pytest

from tests.browser import customer_site, screenshot, sign_in, watch_csp
from widget.strings import DEFAULTS, STRINGS

pytestmark = pytest.mark.live  # daphne and Chromium

PASSWORD = "widget-languages-password"
SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 800}},
    "phone": {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
              "is_mobile": True, "has_touch": True},
}
SETUP = """
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins, user_create
t = Tenant.objects.get(pk={tenant!r})
tenant_set_allowed_origins(tenant=t, origins=[{origin!r}])
user_create(tenant=t, email="mia@acme.test", first_name="Mia", role="manager",
            password={password!r})
"""
ICON = ("() => document.querySelector('[data-service-widget]').shadowRoot"
        ".querySelector('.launcher svg path').getAttribute('d')")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with customer_site(tmp_path_factory.mktemp("var"), SETUP, password=PASSWORD) as stack:
        yield stack


@pytest.fixture(params=list(SIZES))
def size(request):
    return request.param


def visit(stack, size, query="", locale="en-US"):
    context = stack["browser"].new_context(**SIZES[size], locale=locale)
    violations = watch_csp(context)
    page = context.new_page()
    page.goto(stack["site"].origin + "/" + query)
    page.wait_for_function("() => window.ServiceWidget && document.querySelector('[data-service-widget]')")
    return context, page, violations


def open_panel(page):
    page.locator("button.launcher").click()
    page.locator("#sw-input").wait_for()


def words(page) -> dict:
    """What the visitor sees and hears of the widget's own words."""
    return page.evaluate("""() => {
      const r = document.querySelector('[data-service-widget]').shadowRoot;
      return {placeholder: r.querySelector('#sw-input').placeholder,
              title: r.querySelector('h2').textContent,
              greeting: r.querySelector('.greeting')?.textContent,
              close: r.querySelector('.close').getAttribute('aria-label'),
              send: r.querySelector('.send').getAttribute('aria-label'),
              launcher: r.querySelector('.launcher').getAttribute('aria-label'),
              label: r.querySelector('label').textContent};
    }""")


def expect_language(page, language):
    s = STRINGS[language]
    page.wait_for_function(
        "(ph) => document.querySelector('[data-service-widget]').shadowRoot"
        ".querySelector('#sw-input').placeholder === ph", arg=s["ph"])
    seen = words(page)
    assert seen["placeholder"] == s["ph"] and seen["send"] == s["send"]
    assert seen["label"] == s["msg"]
    assert (seen["title"], seen["greeting"]) == DEFAULTS[language]
    return seen


def test_the_option_chooses_the_language(stack, size):
    # The option wins over the browser's French.
    context, page, violations = visit(stack, size, "?data-language=de", locale="fr-FR")
    try:
        page.wait_for_function("() => document.querySelector('[data-service-widget]').shadowRoot"
                               ".querySelector('.launcher').getAttribute('aria-label') === 'Chat öffnen'")
        open_panel(page)
        seen = expect_language(page, "de")
        assert seen["close"] == "Chat schließen" and seen["launcher"] == "Chat schließen"
        screenshot(page, f"widget-language-de{'-phone' if size == 'phone' else ''}.png")
        assert violations == []
    finally:
        context.close()


@pytest.mark.parametrize("locale, language", [("fr-FR", "fr"), ("pt-BR", "pt"), ("ja-JP", "en")])
def test_the_browsers_language_without_the_option(stack, size, locale, language):
    context, page, _ = visit(stack, size, locale=locale)
    try:
        open_panel(page)
        expect_language(page, language)
        if language == "fr":
            screenshot(page, f"widget-language-fr{'-phone' if size == 'phone' else ''}.png")
    finally:
        context.close()


def test_update_switches_the_language_of_the_open_panel(stack, size):
    context, page, _ = visit(stack, size, locale="en-US")
    try:
        open_panel(page)
        expect_language(page, "en")
        page.evaluate("() => ServiceWidget.update({language: 'es'})")
        seen = expect_language(page, "es")
        assert seen["close"] == "Cerrar el chat"
        page.evaluate("() => ServiceWidget.update({language: 'nl-BE'})")
        expect_language(page, "nl")
        page.evaluate("() => ServiceWidget.update({language: 'it'})")
        expect_language(page, "it")
        page.locator("button.close").click()
        assert words(page)["launcher"] == "Apri la chat"
    finally:
        context.close()


def save_launcher(stack, icon: str, text: str) -> str:
    """Saves the launcher in the dashboard's Settings, as a manager does; returns the page's
    message."""
    context = stack["browser"].new_context(**SIZES["desktop"])
    try:
        page = context.new_page()
        sign_in(page, stack["base"], "mia@acme.test", PASSWORD)
        page.goto(stack["base"] + "/dashboard/settings/#widget")
        page.select_option("#id_launcher_icon", icon)
        page.fill("#id_launcher_text", text)
        page.get_by_role("button", name="Save widget").click()
        page.wait_for_load_state()
        if icon == "none" and not text:
            screenshot(page.locator("#widget"), "settings-launcher-refused.png")
        return page.inner_text("body")
    finally:
        context.close()


def test_the_launcher_from_settings_data_attributes_and_update(stack, size):
    refused = save_launcher(stack, "none", "")
    assert "Without an icon the launcher needs a label" in refused
    save_launcher(stack, "question", "Questions? Ask us")
    context, page, violations = visit(stack, size)
    try:
        launcher = page.locator("button.launcher")
        launcher.filter(has_text="Questions? Ask us").wait_for()
        assert page.evaluate(ICON).startswith("M12 2a10")  # the question mark
        box = launcher.bounding_box()
        width = SIZES[size]["viewport"]["width"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= width and box["height"] >= 44
        screenshot(page, f"widget-launcher-label{'-phone' if size == 'phone' else ''}.png")
        # update(): the icon alone, then the label alone.
        page.evaluate("() => ServiceWidget.update({launcherIcon: 'headset', launcherText: ''})")
        assert launcher.inner_text().strip() == "" and page.evaluate(ICON).startswith("M12 1a9")
        page.evaluate("() => ServiceWidget.update({launcherIcon: 'none', launcherText: 'Talk to sales'})")
        assert launcher.inner_text().strip() == "Talk to sales"
        assert page.evaluate("() => document.querySelector('[data-service-widget]').shadowRoot"
                             ".querySelector('.launcher svg').style.display") == "none"
        if size == "desktop":
            screenshot(page, "widget-launcher-text-only.png")
        assert violations == []
    finally:
        context.close()
    # data-* attributes over the Settings: the headset icon, no label.
    context, page, _ = visit(stack, size, "?data-launcher-icon=headset&data-launcher-text=")
    try:
        page.wait_for_function(ICON.replace("() =>", "() => (") + ").startsWith('M12 1a9')")
        assert page.locator("button.launcher").inner_text().strip() == ""
        if size == "desktop":
            screenshot(page, "widget-launcher-headset.png")
    finally:
        context.close()
