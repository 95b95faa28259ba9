"""Two-factor sign-in wherever a person signs in (issue 28, docs/security.md "Accounts"), over
HTTP with Django's test client: the admin's login asks for the code of a person who has a
device (it let the password alone through, and the dashboard took that session); no session
that skipped the code is accepted by the dashboard or the admin; turning it off asks for the
password and a code; backup codes (shown once, kept hashed, each usable once, made anew); a
manager resets a member's second factor. The page flows in Chromium:
tests/dashboard/test_browser_two_factor.py."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.contrib.sessions.models import Session
from django_otp.oath import totp
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.models import Event
from tenants.models import User
from tenants.services import user_create
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD

BACKUP_CODE = re.compile(r"^[a-z2-7]{5}-[a-z2-7]{5}$")


def _code(device: TOTPDevice, drift: int = 0) -> str:
    return str(totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits,
                    drift=drift)).zfill(device.digits)


def _fresh(device: TOTPDevice) -> TOTPDevice:
    """The device as stored, its throttling (a wait after each wrong code) forgotten."""
    device.refresh_from_db()
    device.throttle_reset()
    return device


def _turn_on(client) -> tuple[TOTPDevice, list[str]]:
    """Sets up two-factor sign-in on My profile; the device and the backup codes shown once."""
    assert client.post("/dashboard/profile/two-factor/start/").status_code == 302
    device = TOTPDevice.objects.get(confirmed=False)
    r = client.post("/dashboard/profile/two-factor/confirm/", {"code": _code(device)})
    assert r.status_code == 302 and r["Location"] == "/dashboard/profile/two-factor/backup-codes/"
    return _fresh(device), _codes_on(client.get(r["Location"]))


def _codes_on(response) -> list[str]:
    found = re.search(r'id="backup-codes"[^>]*>([^<]*)<', response.content.decode())
    assert found, response.content.decode()
    return found.group(1).split()


def _password_step(client, username: str, path: str = "/dashboard/login/", **extra):
    return client.post(path, {"username": username, "password": PASSWORD, **extra})


# --- the admin's login, and sessions that skipped the code ----------------------------------------

def test_the_admin_login_asks_for_the_code_of_a_person_with_a_device(rep):
    """Issue 28: a staff member with TOTP signed in at /admin/login/ with the password alone,
    then opened the dashboard."""
    device, _ = _turn_on(signed_in(rep))
    rep.is_staff = True
    rep.save(update_fields=["is_staff"])
    client = Client()
    r = _password_step(client, "ray@acme.test", "/admin/login/", next="/admin/")
    assert r.status_code == 302 and r["Location"] == "/dashboard/login/code/"
    # Nobody is signed in yet: neither the dashboard nor the admin opens.
    assert client.get("/dashboard/leads/")["Location"].startswith("/dashboard/login/")
    assert client.get("/admin/")["Location"].startswith("/admin/login/")
    r = client.post("/dashboard/login/code/", {"code": _code(device, drift=1)})
    assert r.status_code == 302 and r["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    assert client.get("/dashboard/leads/").status_code == 200


def test_an_operator_with_a_device_signs_in_to_the_admin_with_the_code(db):
    operator = User.objects.create_superuser(username="op", email="op@service.test",
                                             password=PASSWORD)
    device = TOTPDevice.objects.create(user=operator, name="phone", confirmed=True)
    client = Client()
    r = _password_step(client, "op", "/admin/login/", next="/admin/tenants/tenant/")
    assert r.status_code == 302 and r["Location"] == "/dashboard/login/code/"
    assert client.get("/admin/tenants/tenant/")["Location"].startswith("/admin/login/")
    r = client.post("/dashboard/login/code/", {"code": "000000" if _code(device) != "000000"
                                                else "111111"})
    assert r.status_code == 400
    _fresh(device)
    r = client.post("/dashboard/login/code/", {"code": _code(device)})
    assert r.status_code == 302 and r["Location"] == "/admin/tenants/tenant/"
    assert client.get("/admin/tenants/tenant/").status_code == 200
    # Without a device, the admin's login is the password, as before.
    User.objects.create_superuser(username="op2", email="op2@service.test", password=PASSWORD)
    other = Client()
    assert _password_step(other, "op2", "/admin/login/", next="/admin/")["Location"] == "/admin/"
    assert other.get("/admin/").status_code == 200


def test_a_session_that_skipped_the_code_is_refused_by_the_dashboard_and_the_admin(rep):
    """Whatever door a session came through (here: signed in before the device existed, as
    ``force_login`` does), once the person has a confirmed device it counts only with a code."""
    device, _ = _turn_on(signed_in(rep))
    rep.is_staff = True
    rep.save(update_fields=["is_staff"])
    password_only = signed_in(rep)
    r = password_only.get("/dashboard/leads/", follow=True)
    assert r.redirect_chain[0][0].startswith("/dashboard/login/")
    assert "Sign in again, with the code of your app" in r.content.decode()
    assert password_only.get("/dashboard/profile/")["Location"].startswith("/dashboard/login/")
    # The set-up pages too: such a session cannot put a device of its own in place.
    assert password_only.post("/dashboard/profile/two-factor/start/").status_code == 302
    assert TOTPDevice.objects.filter(user=rep).count() == 1
    admin = signed_in(rep)
    assert admin.get("/admin/")["Location"].startswith("/admin/login/")
    operator = User.objects.create_superuser(username="op", email="op@service.test",
                                             password=PASSWORD)
    TOTPDevice.objects.create(user=operator, name="phone", confirmed=True)
    assert signed_in(operator).get("/admin/")["Location"].startswith("/admin/login/")
    # The code's session stays good; once the device is gone, so is the need for it.
    client = Client()
    _password_step(client, "ray@acme.test")
    client.post("/dashboard/login/code/", {"code": _code(device, drift=1)})
    assert client.get("/dashboard/leads/").status_code == 200
    TOTPDevice.objects.filter(user=rep).delete()
    assert signed_in(rep).get("/dashboard/leads/").status_code == 200


def test_turning_two_factor_off_asks_for_the_password_and_a_code(rep):
    client = signed_in(rep)
    device, codes = _turn_on(client)
    r = client.post("/dashboard/profile/two-factor/disable/")
    assert r.status_code == 400 and TOTPDevice.objects.filter(user=rep, confirmed=True).exists()
    r = client.post("/dashboard/profile/two-factor/disable/",
                    {"password": "wrong-password", "code": _code(device, drift=1)})
    page = r.content.decode()
    assert r.status_code == 400 and "This is not your password" in page
    r = client.post("/dashboard/profile/two-factor/disable/",
                    {"password": PASSWORD, "code": "123456" if _code(device) != "123456"
                     else "654321"})
    assert r.status_code == 400 and "This code is not right" in r.content.decode()
    assert TOTPDevice.objects.filter(user=rep, confirmed=True).exists()
    _fresh(device)
    r = client.post("/dashboard/profile/two-factor/disable/",
                    {"password": PASSWORD, "code": _code(device, drift=1)})
    assert r.status_code == 302
    assert not TOTPDevice.objects.filter(user=rep).exists()
    assert not StaticDevice.objects.filter(user=rep).exists()
    event = Event.objects.filter(type="team.member_two_factor").order_by("-occurred_at").first()
    assert event.facts["on"] is False and event.facts["actor"]["name"] == "Ray"
    # A backup code does as well as the app's.
    device, codes = _turn_on(client)
    r = client.post("/dashboard/profile/two-factor/disable/",
                    {"password": PASSWORD, "code": codes[0].upper().replace("-", " ")})
    assert r.status_code == 302 and not TOTPDevice.objects.filter(user=rep).exists()


# --- backup codes ----------------------------------------------------------------------------------

def test_backup_codes_are_shown_once_and_kept_only_hashed(rep):
    client = signed_in(rep)
    device, codes = _turn_on(client)
    assert len(codes) == 10 and len(set(codes)) == 10
    assert all(BACKUP_CODE.match(code) for code in codes)
    again = client.get("/dashboard/profile/two-factor/backup-codes/")
    page = again.content.decode()
    assert again["Cache-Control"] == "no-store" and 'id="backup-codes-gone"' in page
    assert not any(code in page for code in codes)
    stored = list(StaticToken.objects.filter(device__user=rep).values_list("token", flat=True))
    assert len(stored) == 10
    plain = {code.replace("-", "") for code in codes}
    assert not plain & set(stored) and not any(p[:5] in t for p in plain for t in stored)
    sessions = json.dumps([s.get_decoded() for s in Session.objects.all()])
    assert not any(code in sessions or code.replace("-", "") in sessions for code in codes)
    profile = client.get("/dashboard/profile/").content.decode()
    assert "10 unused backup codes" in profile


def test_a_backup_code_signs_in_once_in_place_of_the_apps_code(rep):
    _, codes = _turn_on(signed_in(rep))
    client = Client()
    assert _password_step(client, "ray@acme.test")["Location"] == "/dashboard/login/code/"
    r = client.post("/dashboard/login/code/", {"code": codes[3]}, follow=True)
    assert r.redirect_chain[-1][0] == "/dashboard/"
    assert "Signed in with a backup code: 9 left" in r.content.decode()
    # Used up: another sign-in cannot use it again.
    other = Client()
    _password_step(other, "ray@acme.test")
    r = other.post("/dashboard/login/code/", {"code": codes[3]})
    assert r.status_code == 400 and "was used already" in r.content.decode()
    assert other.get("/dashboard/leads/")["Location"].startswith("/dashboard/login/")
    StaticDevice.objects.get(user=rep).throttle_reset()
    r = other.post("/dashboard/login/code/", {"code": codes[4]})
    assert r.status_code == 302 and other.get("/dashboard/leads/").status_code == 200


def test_new_backup_codes_after_the_password_and_the_old_ones_die(rep):
    client = signed_in(rep)
    _, old = _turn_on(client)
    r = client.post("/dashboard/profile/two-factor/backup-codes/new/",
                    {"backup-password": "wrong-password"})
    assert r.status_code == 400 and "This is not your password" in r.content.decode()
    r = client.post("/dashboard/profile/two-factor/backup-codes/new/",
                    {"backup-password": PASSWORD})
    assert r.status_code == 302 and r["Location"] == "/dashboard/profile/two-factor/backup-codes/"
    new = _codes_on(client.get(r["Location"]))
    assert len(new) == 10 and not set(new) & set(old)
    assert StaticToken.objects.filter(device__user=rep).count() == 10
    signing_in = Client()
    _password_step(signing_in, "ray@acme.test")
    r = signing_in.post("/dashboard/login/code/", {"code": old[0]})
    assert r.status_code == 400
    StaticDevice.objects.get(user=rep).throttle_reset()
    assert signing_in.post("/dashboard/login/code/", {"code": new[0]}).status_code == 302


# --- a manager resets a member's second factor ---------------------------------------------------

def test_a_manager_resets_a_members_second_factor(kit, manager, rep, stranger):
    _turn_on(signed_in(rep))
    client = signed_in(manager)
    page = client.get("/dashboard/team/").content.decode()
    row = re.search(rf'data-member="{rep.pk}".*?</tr>', page, re.S).group(0)
    assert "Two-factor on" in row and "Reset two-factor" in row and "data-confirm=" in row
    # A rep may not; another tenant's member is 404; nobody resets their own here.
    r = signed_in(user_create(tenant=kit.tenant, email="rob@acme.test", first_name="Rob",
                              password=PASSWORD)).post(
        f"/dashboard/team/members/{rep.pk}/two-factor/reset/")
    assert r["Location"] == "/dashboard/" and TOTPDevice.objects.filter(user=rep).exists()
    theirs = user_create(tenant=stranger.tenant, email="sam@stranger.test", password=PASSWORD)
    TOTPDevice.objects.create(user=theirs, name="phone", confirmed=True)
    assert client.post(f"/dashboard/team/members/{theirs.pk}/two-factor/reset/").status_code == 404
    assert TOTPDevice.objects.filter(user=theirs).exists()
    _turn_on(client)
    assert client.post(f"/dashboard/team/members/{manager.pk}/two-factor/reset/").status_code == 400

    r = client.post(f"/dashboard/team/members/{rep.pk}/two-factor/reset/", follow=True)
    assert "Ray's two-factor sign-in is reset" in html.unescape(r.content.decode())
    assert not TOTPDevice.objects.filter(user=rep).exists()
    assert not StaticDevice.objects.filter(user=rep).exists()
    event = Event.objects.filter(type="team.member_two_factor", facts__reset=True).get()
    assert event.facts["actor"]["name"] == "Mia" and event.facts["member"]["id"] == str(rep.pk)
    assert event.facts["on"] is False and event.description == (
        "Mia reset the two-factor sign-in of Ray")
    assert "Mia reset the two-factor sign-in of Ray" in client.get("/dashboard/team/").content.decode()
    # The member signs in with the password alone again.
    member = Client()
    assert _password_step(member, "ray@acme.test")["Location"] == "/dashboard/"
    assert member.get("/dashboard/leads/").status_code == 200


def test_the_admin_token_resets_a_members_second_factor(kit, rep):
    _turn_on(signed_in(rep))
    admin = Client()
    admin.post("/dashboard/login/token/", {"token": kit.admin_token})
    assert admin.post(f"/dashboard/team/members/{rep.pk}/two-factor/reset/").status_code == 302
    event = Event.objects.get(type="team.member_two_factor", facts__reset=True)
    assert event.facts["actor"] == {"id": None, "name": "Administrator (admin token)"}


@pytest.mark.parametrize("path", ["/dashboard/profile/two-factor/backup-codes/",
                                  "/dashboard/profile/two-factor/backup-codes/new/"])
def test_the_admin_token_has_no_backup_codes(kit, path):
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    r = client.post(path) if path.endswith("new/") else client.get(path)
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
