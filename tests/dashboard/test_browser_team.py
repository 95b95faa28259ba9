"""A manager runs the team in a real browser (headless Chromium) against a real daphne process
and a real SMTP server (aiosmtpd): the manager invites a rep, the invitation email arrives, the
rep follows its link, chooses a password and is signed in; the manager deactivates a rep, whose
open page is signed out and whose password no longer works; a rep resets a forgotten password
by email; a rep turns on TOTP two-factor sign-in and signs in with a code computed here.
Screenshots with ``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import base64
import json
import re

import pytest
from django_otp.oath import totp

from tests.browser import browser, screenshot, watch_csp
from tests.live import daphne, free_port, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne, an SMTP server and Chromium

NEW_PASSWORD = "violet-harbour-93-compass"

SETUP = """
from tenants.models import Tenant
from tenants.services import user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
for email, name in [("rob@acme.test", "Rob"), ("rae@acme.test", "Rae"), ("tom@acme.test", "Tom")]:
    user_create(tenant=tenant, email=email, first_name=name, password={password!r})
"""

ACTIVE = """
import json
from tenants.models import User
print(json.dumps({u.username: u.is_active for u in User.objects.filter(tenant__isnull=False)}))
"""


@pytest.fixture(scope="module")
def team_stack(tmp_path_factory, smtp_server):
    port = free_port()
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("team")),
           "EMAIL_URL": f"smtp://127.0.0.1:{smtp_server.port}",
           "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}"}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD), env=env)
    with browser() as chromium, daphne(env, port=port) as base:
        yield {"base": base, "browser": chromium, "env": env, "smtp": smtp_server}


@pytest.fixture
def contexts(team_stack):
    made = []

    def new():
        context = team_stack["browser"].new_context(viewport={"width": 1280, "height": 900})
        made.append((context, watch_csp(context)))
        return context.new_page()

    yield new
    for context, violations in made:
        assert violations == []
        context.close()


def _sign_in(page, base: str, email: str, password: str = PASSWORD) -> None:
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Sign in", exact=True).click()


def _active(stack) -> dict[str, bool]:
    return json.loads(manage("shell", "-c", ACTIVE, env=stack["env"]).splitlines()[-1])


def _mail_to(stack, address: str, timeout: float = 15.0):
    smtp = stack["smtp"]
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = smtp.to(address)
        if found:
            return found[-1]
        time.sleep(0.1)
    raise AssertionError(f"no email to {address} arrived")


def test_a_manager_invites_a_rep_who_joins_and_signs_in(team_stack, contexts):
    base = team_stack["base"]
    manager = contexts()
    _sign_in(manager, base, "mia@acme.test")
    manager.wait_for_url(base + "/dashboard/")
    manager.get_by_role("link", name="Team").click()
    manager.fill("#id_email", "nia@acme.test")
    manager.select_option("#id_role", "rep")
    manager.get_by_role("button", name="Send invitation").click()
    manager.wait_for_url(re.compile(r".*/dashboard/team/invitations/.*/sent/"))
    shown = manager.locator("#invitation-link").inner_text()
    assert "Invitation sent to nia@acme.test" in manager.locator(".messages").inner_text()

    email = _mail_to(team_stack, "nia@acme.test")
    assert email.message["Subject"] == "Mia Manager invites you to Acme's sales team"
    link = re.search(r"(http://\S+/dashboard/invitations/\S+/)", email.text()).group(1)
    assert link == shown

    manager.get_by_role("link", name="Done").click()
    assert manager.locator("#invitations", has_text="nia@acme.test").count() == 1
    screenshot(manager, "dashboard-team.png", full_page=True)

    rep = contexts()
    rep.goto(link)
    assert "Join Acme" in rep.locator("h1").inner_text()
    rep.fill("#id_first_name", "Nia")
    rep.fill("#id_last_name", "Newcomer")
    rep.fill("#id_password1", "password")
    rep.fill("#id_password2", "password")
    rep.get_by_role("button", name="Join the team").click()
    assert "This password is too common." in rep.content()
    rep.fill("#id_password1", NEW_PASSWORD)
    rep.fill("#id_password2", NEW_PASSWORD)
    screenshot(rep, "dashboard-invitation.png", full_page=True)
    rep.get_by_role("button", name="Join the team").click()
    rep.wait_for_url(base + "/dashboard/")
    assert "Welcome to Acme, Nia Newcomer." in rep.locator(".messages").inner_text()
    # Signed out and in again with the password chosen.
    rep.get_by_role("button", name="Sign out").click()
    _sign_in(rep, base, "nia@acme.test", NEW_PASSWORD)
    rep.wait_for_url(base + "/dashboard/")
    # The link worked once.
    rep.goto(link)
    assert "was used already" in rep.locator("#invitation-problem").inner_text()


def test_the_manager_deactivates_a_rep(team_stack, contexts):
    base = team_stack["base"]
    rep = contexts()
    _sign_in(rep, base, "rob@acme.test")
    rep.wait_for_url(base + "/dashboard/")

    manager = contexts()
    _sign_in(manager, base, "mia@acme.test")
    manager.goto(base + "/dashboard/team/")
    row = manager.locator("#members tr", has_text="rob@acme.test")
    manager.once("dialog", lambda dialog: dialog.dismiss())  # declined: nothing happens
    row.get_by_role("button", name="Deactivate").click()
    assert _active(team_stack)["rob@acme.test"] is True
    manager.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Deactivate").click()
    manager.wait_for_url(base + "/dashboard/team/")
    assert "Rob is deactivated" in manager.locator(".messages").inner_text()
    assert manager.locator("#members tr", has_text="rob@acme.test").locator(
        ".pill").inner_text() == "Deactivated"
    assert _active(team_stack)["rob@acme.test"] is False
    assert "Mia Manager deactivated Rob" in manager.locator("#team-activity").inner_text()
    screenshot(manager, "dashboard-team-deactivated.png", full_page=True)

    # The rep's open dashboard is signed out at the next page, and the password is refused.
    rep.goto(base + "/dashboard/leads/")
    assert rep.url.startswith(base + "/dashboard/login/")
    _sign_in(rep, base, "rob@acme.test")
    assert "No account has this email and password" in rep.content()


def test_a_rep_resets_a_forgotten_password_by_email(team_stack, contexts):
    base = team_stack["base"]
    page = contexts()
    page.goto(base + "/dashboard/login/")
    page.get_by_role("link", name="Forgot your password?").click()
    page.fill("#id_email", "rae@acme.test")
    page.get_by_role("button", name="Send the link").click()
    page.wait_for_url(base + "/dashboard/password-reset/sent/")
    email = _mail_to(team_stack, "rae@acme.test")
    link = re.search(r"(http://\S+/dashboard/password-reset/\S+/)", email.text()).group(1)
    page.goto(link)
    page.fill("#id_new_password1", NEW_PASSWORD)
    page.fill("#id_new_password2", NEW_PASSWORD)
    page.get_by_role("button", name="Save the password").click()
    page.wait_for_url(base + "/dashboard/password-reset/done/")
    page.get_by_role("link", name="Sign in").last.click()
    _sign_in(page, base, "rae@acme.test", PASSWORD)
    assert "No account has this email and password" in page.content()
    _sign_in(page, base, "rae@acme.test", NEW_PASSWORD)
    page.wait_for_url(base + "/dashboard/")


def _code(secret: str, drift: int = 0) -> str:
    key = base64.b32decode(secret.replace(" ", "") + "=" * (-len(secret.replace(" ", "")) % 8))
    return str(totp(key, step=30, t0=0, digits=6, drift=drift)).zfill(6)


def test_totp_sign_in_with_a_code_computed_here(team_stack, contexts):
    base = team_stack["base"]
    page = contexts()
    _sign_in(page, base, "tom@acme.test")
    page.wait_for_url(base + "/dashboard/")
    page.get_by_role("link", name="Tom").click()
    page.get_by_role("button", name="Set up two-factor sign-in").click()
    assert page.locator("#totp-qr").evaluate("img => img.naturalWidth") > 0
    secret = page.locator("#totp-secret").inner_text()
    screenshot(page, "dashboard-profile-two-factor.png", full_page=True)
    page.fill("#id_code", "000000" if _code(secret) != "000000" else "111111")
    page.get_by_role("button", name="Turn on").click()
    assert "is not the one your app shows" in page.content()
    page.wait_for_timeout(1100)  # django-otp's throttling: a second after one wrong code
    page.fill("#id_code", _code(secret))
    page.get_by_role("button", name="Turn on").click()
    assert "Two-factor sign-in is on" in page.locator(".messages").inner_text()

    page.get_by_role("button", name="Sign out").click()
    _sign_in(page, base, "tom@acme.test")
    page.wait_for_url(base + "/dashboard/login/code/")
    page.fill("#id_code", "123456" if _code(secret, 1) != "123456" else "654321")
    page.get_by_role("button", name="Sign in").click()
    assert "This code is not right" in page.content()
    page.goto(base + "/dashboard/leads/")
    assert page.url.startswith(base + "/dashboard/login/")  # not signed in without the code
    _sign_in(page, base, "tom@acme.test")
    page.wait_for_url(base + "/dashboard/login/code/")
    page.wait_for_timeout(1100)  # the throttling's second after the wrong code
    # The code of the next step (the one before was used to turn it on).
    page.fill("#id_code", _code(secret, 1))
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(base + "/dashboard/")
