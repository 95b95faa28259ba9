"""Staff names and addresses in the dashboard follow the rules leads follow (docs/dashboard.md,
"Accounts"; docs/security.md): a name is one line (it goes into invitation and meeting emails),
and an address is kept in one form, so that a look-alike of a colleague's address is theirs or
refused, never a second account. Issue 28, "Look-alike emails" and "Control characters"."""

from __future__ import annotations

import html

import pytest

from tenants.models import Invitation, User
from tests.dashboard.client import Client, signed_in

GOOD_PASSWORD = "plum-orchard-47-lantern"


def _page(r) -> str:
    return html.unescape(r.content.decode())


@pytest.mark.parametrize("names", [{"first_name": "Ray\r\nBcc: x@evil.example"},
                                   {"first_name": "Ray", "last_name": "Or\ttiz"}])
def test_a_name_with_a_control_character_is_refused(rep, names):
    r = signed_in(rep).post("/dashboard/profile/details/", {**names, "email": "ray@acme.test"})
    assert r.status_code == 400
    assert "control characters are not allowed" in _page(r)
    rep.refresh_from_db()
    assert (rep.first_name, rep.last_name) == ("Ray", "")


def test_a_look_alike_address_is_refused_and_another_form_of_a_colleagues_is_taken(rep, manager):
    client = signed_in(rep)
    r = client.post("/dashboard/profile/details/", {"first_name": "Ray",
                                                    "email": "ſam@acme.test"})
    assert r.status_code == 400 and "Enter a valid email address." in _page(r)
    r = client.post("/dashboard/profile/details/", {"first_name": "Ray",
                                                    "email": "mia@ＡＣＭＥ.test"})
    assert r.status_code == 400 and "Another account has this address." in _page(r)
    rep.refresh_from_db()
    assert rep.email == rep.username == "ray@acme.test"
    # One's own address in another form is one's own, kept in the one form.
    r = client.post("/dashboard/profile/details/", {"first_name": "Ray",
                                                    "email": "Ray@ａｃｍｅ.TEST"})
    assert r.status_code == 302
    rep.refresh_from_db()
    assert rep.email == rep.username == "ray@acme.test"


def test_invitations_take_addresses_in_the_kept_form(manager, rep):
    client = signed_in(manager)
    r = client.post("/dashboard/team/invite/", {"email": "ſam@acme.test", "role": "rep"})
    assert r.status_code == 400 and "Enter a valid email address." in _page(r)
    r = client.post("/dashboard/team/invite/", {"email": "ray@ＡＣＭＥ.test", "role": "rep"})
    assert r.status_code == 400 and "already has an account in your team" in _page(r)
    assert not Invitation.objects.exists()
    r = client.post("/dashboard/team/invite/", {"email": "Nia@Bücher.example", "role": "rep"})
    assert r.status_code == 302
    assert Invitation.objects.get().email == "nia@xn--bcher-kva.example"


def test_accepting_an_invitation_refuses_a_name_with_a_line_break(manager):
    client = signed_in(manager)
    r = client.post("/dashboard/team/invite/", {"email": "nia@acme.test", "role": "rep"})
    page = client.get(r["Location"]).content.decode()
    link = page.split('id="invitation-link">', 1)[1].split("<", 1)[0]
    link = link.replace("http://testserver", "")
    r = Client().post(link, {"first_name": "Nia\nX-Injected: yes", "password1": GOOD_PASSWORD,
                             "password2": GOOD_PASSWORD})
    assert r.status_code == 400 and "control characters are not allowed" in _page(r)
    assert not User.objects.filter(username="nia@acme.test").exists()
    r = Client().post(link, {"first_name": "Nia", "password1": GOOD_PASSWORD,
                             "password2": GOOD_PASSWORD})
    assert r.status_code == 302
    assert User.objects.get(username="nia@acme.test").first_name == "Nia"
