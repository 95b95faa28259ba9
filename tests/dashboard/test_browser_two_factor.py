"""Two-factor sign-in's page flows in a real browser (headless Chromium) against a real daphne
process (issue 28): a rep turns it on and gets backup codes shown once, signs in with one in
place of the app's code (once only), makes new ones, and turns it off with the password and a
code; a manager resets a member's second factor from the Team page; an operator with a device
signs in at the admin's login and is asked for the code before the admin opens. Screenshots
with ``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import base64
import json
import re

import pytest
from django_otp.oath import totp

from tests.browser import browser, screenshot, watch_csp
from tests.live import daphne, free_port, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne and Chromium

# The operator's device key (RFC 6238's test key, "12345678901234567890").
OPERATOR_KEY = "3132333435363738393031323334353637383930"

SETUP = """
from django_otp.plugins.otp_totp.models import TOTPDevice
from tenants.models import Tenant, User
from tenants.services import user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
for email, name in [("ray@acme.test", "Ray"), ("rob@acme.test", "Rob")]:
    user_create(tenant=tenant, email=email, first_name=name, password={password!r})
operator = User.objects.create_superuser(username="op", email="op@service.test",
                                         password={password!r})
TOTPDevice.objects.create(user=operator, name="phone", key={key!r}, confirmed=True)
"""

DEVICES = """
import json
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice
print(json.dumps({{"totp": TOTPDevice.objects.filter(user__username={user!r}).count(),
                  "tokens": list(StaticToken.objects.filter(device__user__username={user!r})
                                 .values_list("token", flat=True))}}))
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("two-factor"))}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    manage("shell", "-c", SETUP.format(tenant=acme["tenant"]["id"], password=PASSWORD,
                                       key=OPERATOR_KEY), env=env)
    with browser() as chromium, daphne(env, port=free_port()) as base:
        yield {"base": base, "browser": chromium, "env": env}


@pytest.fixture
def contexts(stack):
    made = []

    def new():
        context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
        made.append((context, watch_csp(context)))
        return context.new_page()

    yield new
    for context, violations in made:
        assert violations == []
        context.close()


def _devices(stack, user: str) -> dict:
    return json.loads(manage("shell", "-c", DEVICES.format(user=user), env=stack["env"])
                      .splitlines()[-1])


def _code(secret: str, drift: int = 0) -> str:
    secret = secret.replace(" ", "")
    key = base64.b32decode(secret + "=" * (-len(secret) % 8))
    return str(totp(key, step=30, t0=0, digits=6, drift=drift)).zfill(6)


def _sign_in(page, base: str, email: str) -> None:
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()


def _code_step(page, base: str, code: str) -> None:
    page.wait_for_url(base + "/dashboard/login/code/")
    page.fill("#id_code", code)
    page.get_by_role("button", name="Sign in").click()


def test_backup_codes_from_set_up_to_sign_in_and_anew(stack, contexts):
    base = stack["base"]
    page = contexts()
    _sign_in(page, base, "ray@acme.test")
    page.wait_for_url(base + "/dashboard/")
    page.get_by_role("link", name="Ray").click()
    page.get_by_role("button", name="Set up two-factor sign-in").click()
    secret = page.locator("#totp-secret").inner_text()
    page.fill("#id_code", _code(secret))
    page.get_by_role("button", name="Turn on").click()

    # The codes, once, on a page of their own.
    page.wait_for_url(base + "/dashboard/profile/two-factor/backup-codes/")
    assert "Two-factor sign-in is on" in page.locator(".messages").inner_text()
    codes = page.locator("#backup-codes").inner_text().split()
    assert len(codes) == 10 and all(re.fullmatch(r"[a-z2-7]{5}-[a-z2-7]{5}", c) for c in codes)
    assert page.locator("[data-copy='#backup-codes']").is_visible()
    screenshot(page, "dashboard-backup-codes.png", full_page=True)
    page.reload()
    assert page.locator("#backup-codes-gone").is_visible()
    assert not any(code in page.content() for code in codes)
    stored = _devices(stack, "ray@acme.test")["tokens"]
    assert len(stored) == 10 and not {c.replace("-", "") for c in codes} & set(stored)

    # Without the phone: a backup code in place of the app's code, once.
    page.get_by_role("button", name="Sign out").click()
    _sign_in(page, base, "ray@acme.test")
    _code_step(page, base, codes[0])
    page.wait_for_url(base + "/dashboard/")
    assert "Signed in with a backup code: 9 left" in page.locator(".messages").inner_text()
    page.get_by_role("button", name="Sign out").click()
    _sign_in(page, base, "ray@acme.test")
    _code_step(page, base, codes[0])
    assert "was used already" in page.content()
    page.goto(base + "/dashboard/leads/")
    assert page.url.startswith(base + "/dashboard/login/")  # not signed in without a code

    # New codes (after the password): the old ones stop working.
    _sign_in(page, base, "ray@acme.test")
    page.wait_for_timeout(1100)  # django-otp's throttling: a second after one wrong code
    _code_step(page, base, codes[1])
    page.wait_for_url(base + "/dashboard/")
    page.goto(base + "/dashboard/profile/#two-factor")
    assert "8 unused backup codes" in page.locator("#backup-codes-left").inner_text()
    page.fill("#id_backup-password", PASSWORD)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Make new backup codes").click()
    page.wait_for_url(base + "/dashboard/profile/two-factor/backup-codes/")
    fresh = page.locator("#backup-codes").inner_text().split()
    assert len(fresh) == 10 and not set(fresh) & set(codes)

    # Turning it off asks for the password and a code.
    page.get_by_role("link", name="Done").click()
    page.fill("#id_password", PASSWORD)
    page.fill("#id_code", "")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Turn off").click()
    assert "This field is required" in page.locator("#two-factor").inner_text()
    assert _devices(stack, "ray@acme.test")["totp"] == 1
    page.fill("#id_password", PASSWORD)
    page.fill("#id_code", fresh[0])
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Turn off").click()
    assert "Two-factor sign-in is off" in page.locator(".messages").inner_text()
    assert _devices(stack, "ray@acme.test") == {"totp": 0, "tokens": []}


def test_a_manager_resets_a_members_second_factor(stack, contexts):
    base = stack["base"]
    member = contexts()
    _sign_in(member, base, "rob@acme.test")
    member.wait_for_url(base + "/dashboard/")
    member.goto(base + "/dashboard/profile/#two-factor")
    member.get_by_role("button", name="Set up two-factor sign-in").click()
    member.fill("#id_code", _code(member.locator("#totp-secret").inner_text()))
    member.get_by_role("button", name="Turn on").click()
    member.wait_for_url(base + "/dashboard/profile/two-factor/backup-codes/")
    member.get_by_role("button", name="Sign out").click()

    manager = contexts()
    _sign_in(manager, base, "mia@acme.test")
    manager.goto(base + "/dashboard/team/")
    row = manager.locator("#members tr", has_text="rob@acme.test")
    assert "Two-factor on" in row.inner_text()
    manager.once("dialog", lambda dialog: dialog.dismiss())  # declined: nothing happens
    row.get_by_role("button", name="Reset two-factor").click()
    assert _devices(stack, "rob@acme.test")["totp"] == 1
    manager.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Reset two-factor").click()
    manager.wait_for_url(base + "/dashboard/team/")
    assert "two-factor sign-in is reset" in manager.locator(".messages").inner_text()
    assert "Mia Manager reset the two-factor sign-in of Rob" in manager.locator(
        "#team-activity").inner_text()
    assert "Reset two-factor" not in manager.locator(
        "#members tr", has_text="rob@acme.test").inner_text()
    screenshot(manager, "dashboard-team-two-factor-reset.png", full_page=True)
    assert _devices(stack, "rob@acme.test") == {"totp": 0, "tokens": []}

    # The member signs in with the password alone.
    _sign_in(member, base, "rob@acme.test")
    member.wait_for_url(base + "/dashboard/")


def test_the_admin_login_asks_an_operator_with_a_device_for_the_code(stack, contexts):
    base = stack["base"]
    page = contexts()
    page.goto(base + "/admin/")
    page.wait_for_url(re.compile(r".*/admin/login/.*"))
    page.fill("#id_username", "op")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/dashboard/login/code/")
    page.goto(base + "/admin/")
    assert page.url.startswith(base + "/admin/login/")  # the password alone opens nothing
    page.fill("#id_username", "op")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    secret = base64.b32encode(bytes.fromhex(OPERATOR_KEY)).decode()
    _code_step(page, base, _code(secret))
    page.wait_for_url(base + "/admin/")
    assert "Site administration" in page.content()
