"""Accounts over HTTP (docs/dashboard.md, "Accounts"): My profile (name, email, password with
Django's validators, emails), password reset by email over real SMTP with Django's tokens,
sign-in rate limits per address and per account and address (429, Retry-After, nothing
checked; that an attacker elsewhere cannot lock the owner out: test_sign_in_limits.py), and TOTP
two-factor sign-in (set up, a wrong code, the code step, the team's requirement)."""

from __future__ import annotations

import re

import pytest
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.models import Event
from dashboard.limits import PER_ACCOUNT, PER_ADDRESS, RESETS_PER_ADDRESS
from tenants.services import user_create
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD

NEW_PASSWORD = "violet-harbour-93-compass"


def _sign_in(client, email="ray@acme.test", password=PASSWORD):
    return client.post("/dashboard/login/", {"username": email, "password": password})


def _code(device: TOTPDevice, drift: int = 0) -> str:
    return str(totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits,
                    drift=drift)).zfill(device.digits)


# --- My profile ---------------------------------------------------------------------------------

def test_the_profile_has_its_sections_and_the_old_address_leads_there(rep):
    client = signed_in(rep)
    r = client.get("/dashboard/account/")
    assert r.status_code == 302 and r["Location"] == "/dashboard/profile/"
    page = client.get("/dashboard/profile/").content.decode()
    for section in ('id="details"', 'id="password"', 'id="notifications"', 'id="two-factor"',
                    'id="calendars"'):
        assert section in page, section


def test_a_person_changes_their_name_and_email(rep, manager):
    client = signed_in(rep)
    r = client.post("/dashboard/profile/details/", {"first_name": "Raymond", "last_name": "Ortiz",
                                                    "email": "Raymond@Acme.test"})
    assert r.status_code == 302
    rep.refresh_from_db()
    assert (rep.first_name, rep.email, rep.username) == ("Raymond", "raymond@acme.test",
                                                         "raymond@acme.test")
    assert _sign_in(Client(), "raymond@acme.test").status_code == 302
    r = client.post("/dashboard/profile/details/", {"first_name": "Raymond",
                                                    "email": "mia@acme.test"})
    assert r.status_code == 400 and "Another account has this address." in r.content.decode()
    rep.refresh_from_db()
    assert rep.email == "raymond@acme.test"


def test_a_password_change_follows_the_validators_and_keeps_this_session(rep):
    client = signed_in(rep)
    r = client.post("/dashboard/profile/password/", {
        "old_password": PASSWORD, "new_password1": "password", "new_password2": "password"})
    assert r.status_code == 400 and "This password is too common." in r.content.decode()
    r = client.post("/dashboard/profile/password/", {
        "old_password": "wrong", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert r.status_code == 400
    rep.refresh_from_db()
    assert rep.check_password(PASSWORD)
    other_session = signed_in(rep)
    r = client.post("/dashboard/profile/password/", {
        "old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert r.status_code == 302 and client.get("/dashboard/").status_code == 200
    assert other_session.get("/dashboard/").status_code == 302  # the other session ended
    assert _sign_in(Client(), password=NEW_PASSWORD).status_code == 302


def test_notification_settings_are_saved(rep):
    client = signed_in(rep)
    r = client.post("/dashboard/profile/notifications/", {"email_on_meeting": "on"})
    assert r.status_code == 302
    rep.refresh_from_db()
    assert (rep.takes_meetings, rep.email_on_meeting, rep.email_on_handoff) == (False, True, False)


# --- password reset -------------------------------------------------------------------------------

def test_a_password_is_reset_by_email(rep, smtp):
    r = Client().post("/dashboard/password-reset/", {"email": "RAY@acme.test"})
    assert r.status_code == 302 and r["Location"] == "/dashboard/password-reset/sent/"
    received = smtp.wait_for(1)
    assert received[0].to == "ray@acme.test"
    link = re.search(r"http://testserver(/dashboard/password-reset/\S+/)", received[0].text()).group(1)
    client = Client()
    r = client.get(link)  # Django moves the token into the session, then redirects
    assert r.status_code == 302
    form_url = r["Location"]
    r = client.post(form_url, {"new_password1": "12345678", "new_password2": "12345678"})
    assert r.status_code == 200 and "This password is too common." in r.content.decode()
    r = client.post(form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert r.status_code == 302 and r["Location"] == "/dashboard/password-reset/done/"
    assert _sign_in(Client(), password=NEW_PASSWORD).status_code == 302
    # The link works once.
    r = Client().get(link)
    assert "This link does not work any more" in r.content.decode()


def test_a_reset_for_an_unknown_or_inactive_address_sends_nothing_and_says_the_same(rep, smtp):
    rep.is_active = False
    rep.save()
    for email in ("nobody@acme.test", "ray@acme.test"):
        r = Client().post("/dashboard/password-reset/", {"email": email})
        assert r.status_code == 302 and r["Location"] == "/dashboard/password-reset/sent/"
    assert smtp.received == []


def test_reset_requests_are_limited_per_address(rep, smtp):
    client = Client()
    for _ in range(RESETS_PER_ADDRESS):
        assert client.post("/dashboard/password-reset/", {"email": "x@acme.test"}).status_code == 302
    r = client.post("/dashboard/password-reset/", {"email": "ray@acme.test"})
    assert r.status_code == 429 and int(r["Retry-After"]) > 0
    assert "Too many reset emails" in r.content.decode() and smtp.received == []


# --- sign-in rate limits ----------------------------------------------------------------------------

def test_sign_in_is_limited_per_account_and_address(rep, clock):
    for _ in range(PER_ACCOUNT):
        assert _sign_in(Client(), password="wrong").status_code == 200
    # From this address, even the right password is not checked now (another address's is:
    # tests/dashboard/test_sign_in_limits.py).
    r = _sign_in(Client())
    assert r.status_code == 429 and int(r["Retry-After"]) > 0
    assert "Too many failed sign-ins for this account from your address" in r.content.decode()
    # Another account from the same address still signs in.
    user_create(tenant=rep.tenant, email="zoe@acme.test", first_name="Zoe", password=PASSWORD)
    assert _sign_in(Client(), "zoe@acme.test").status_code == 302
    clock.advance(15 * 60)
    assert _sign_in(Client()).status_code == 302


def test_sign_in_is_limited_per_address(rep, clock):
    client = Client()
    for n in range(PER_ADDRESS):
        assert _sign_in(client, f"guess{n}@acme.test", "wrong").status_code == 200
    r = _sign_in(client)
    assert r.status_code == 429 and "for your address" in r.content.decode()
    r = client.post("/dashboard/login/token/", {"token": "at_guess"})
    assert r.status_code == 429


# --- two-factor -------------------------------------------------------------------------------------

def _enable_totp(client, user) -> TOTPDevice:
    assert client.post("/dashboard/profile/two-factor/start/").status_code == 302
    page = client.get("/dashboard/profile/").content.decode()
    assert 'src="data:image/svg+xml' in page and 'id="totp-secret"' in page
    device = TOTPDevice.objects.get(user=user, confirmed=False)
    assert "otpauth://totp/" in page and device.config_url.split("secret=")[1][:8] in page
    r = client.post("/dashboard/profile/two-factor/confirm/", {"code": "000000"
                    if _code(device) != "000000" else "111111"})
    assert r.status_code == 400 and "is not the one your app shows" in r.content.decode()
    device.refresh_from_db()
    device.throttle_reset()
    assert client.post("/dashboard/profile/two-factor/confirm/",
                       {"code": _code(device)}).status_code == 302
    device.refresh_from_db()
    assert device.confirmed
    return device


def test_totp_sign_in_asks_for_the_code_after_the_password(rep):
    device = _enable_totp(signed_in(rep), rep)
    client = Client()
    r = _sign_in(client)
    assert r.status_code == 302 and r["Location"] == "/dashboard/login/code/"
    # Not signed in yet.
    assert client.get("/dashboard/").status_code == 302
    r = client.post("/dashboard/login/code/", {"code": "12345"})
    assert r.status_code == 400 and "This code is not right" in r.content.decode()
    device.refresh_from_db()
    device.throttle_reset()
    r = client.post("/dashboard/login/code/", {"code": _code(device, drift=1)})
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
    assert client.get("/dashboard/").status_code == 200


def test_the_code_step_needs_the_password_step_first(rep):
    r = Client().post("/dashboard/login/code/", {"code": "123456"})
    assert r.status_code == 302 and r["Location"] == "/dashboard/login/"


def test_the_code_step_is_rate_limited_per_account(rep):
    _enable_totp(signed_in(rep), rep)
    client = Client()
    _sign_in(client)  # the right password: no failure
    statuses = [client.post("/dashboard/login/code/", {"code": "99999"}).status_code
                for _ in range(PER_ACCOUNT + 1)]
    assert statuses[:PER_ACCOUNT] == [400] * PER_ACCOUNT and statuses[-1] == 429


def test_a_manager_requires_two_factor_for_the_team(kit, manager, rep):
    r = signed_in(manager).post("/dashboard/team/two-factor/", {"required": "on"})
    assert r.status_code == 302
    assert Event.objects.get(type="team.two_factor_required").facts["actor"]["name"] == "Mia"
    client = signed_in(rep)
    # Before anything else, set it up.
    r = client.get("/dashboard/leads/")
    assert r.status_code == 302 and r["Location"] == "/dashboard/profile/#two-factor"
    assert client.get("/dashboard/profile/").status_code == 200
    _enable_totp(client, rep)
    assert client.get("/dashboard/leads/").status_code == 200
    event = Event.objects.get(type="team.member_two_factor")
    assert event.facts["on"] is True and event.facts["actor"]["name"] == "Ray"
    # The manager is held to it too; the admin token (no person) sees the team's activity.
    assert signed_in(manager).get("/dashboard/team/")["Location"] == "/dashboard/profile/#two-factor"
    admin = Client()
    admin.post("/dashboard/login/token/", {"token": kit.admin_token})
    assert "Ray turned two-factor sign-in on" in admin.get("/dashboard/team/").content.decode()
    # A session that did not sign in with the code (here: another browser) is sent to sign in.
    other = signed_in(rep)
    r = other.get("/dashboard/leads/")
    assert r.status_code == 302 and r["Location"].startswith("/dashboard/login/")


@pytest.mark.parametrize("path", ["/dashboard/profile/", "/dashboard/profile/two-factor/start/"])
def test_the_admin_token_has_no_profile(kit, path):
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    r = client.post(path) if path.endswith("start/") else client.get(path)
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
    assert not TOTPDevice.objects.exists()


def test_operators_see_devices_and_invitations_without_their_secrets(rep, manager):
    from tenants.models import Invitation, User

    device = _enable_totp(signed_in(rep), rep)
    client = signed_in(manager)
    client.post("/dashboard/team/invite/", {"email": "nia@acme.test", "role": "rep"})
    invitation = Invitation.objects.get()
    operator = User.objects.create_superuser(username="op", email="op@service.test",
                                             password=PASSWORD)
    admin = signed_in(operator)
    page = admin.get(f"/admin/otp_totp/totpdevice/{device.pk}/change/").content.decode()
    assert "ray@acme.test" in page and device.key not in page
    page = admin.get(f"/admin/tenants/invitation/{invitation.pk}/change/").content.decode()
    assert "nia@acme.test" in page and invitation.token_hash not in page
    assert admin.post(f"/admin/tenants/invitation/{invitation.pk}/change/",
                      {"email": "x@evil.test"}).status_code == 403
    r = admin.post(f"/admin/otp_totp/totpdevice/{device.pk}/delete/", {"post": "yes"})
    assert r.status_code == 302 and not TOTPDevice.objects.filter(user=rep).exists()
