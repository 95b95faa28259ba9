"""API keys on the dashboard over HTTP (Django's test client): generating and rotating answer
with a redirect (POST-redirect-GET), the page it leads to shows the new value once and never
again, the value waits for that page in the session encrypted and only until then, and another
tenant's key page is 404. The browser's side (reload, Copy, confirmations):
tests/dashboard/test_browser_keys.py."""

from __future__ import annotations

import json

import pytest
from django.contrib.sessions.models import Session

from apikeys.models import ApiKey
from dashboard.views.common import SECRET_TTL, SECRETS_SESSION_KEY
from tenants.services import user_create
from tests.dashboard.client import signed_in
from tests.factories import PASSWORD

GONE = "The key was shown once"


@pytest.fixture
def manager(kit):
    return user_create(tenant=kit.tenant, email="mia@acme.test", first_name="Mia",
                       last_name="Manager", role="manager", password=PASSWORD)


def _sessions_text() -> str:
    """Every stored session, decoded: what the session table holds."""
    return json.dumps([s.get_decoded() for s in Session.objects.all()])


def test_generate_redirects_and_the_page_shows_the_key_once(api, kit, manager):
    client = signed_in(manager)
    before = ApiKey.objects.filter(tenant=kit.tenant).count()
    r = client.post("/dashboard/keys/new/", {"name": "CRM sync", "scope": "read", "mode": "live"})
    key = ApiKey.objects.get(tenant=kit.tenant, name="CRM sync")
    page = f"/dashboard/keys/{key.pk}/created/"
    assert r.status_code == 302 and r["Location"] == page
    assert r["Cache-Control"] == "no-store" and not r.content

    shown = client.get(page)
    assert shown.status_code == 200 and shown["Cache-Control"] == "no-store"
    raw = shown.context["secret"]
    html = shown.content.decode()
    assert raw.startswith("sk_live_") and f'id="new-key">{raw}</code>' in html
    assert 'data-copy="#new-key"' in html and "Key “CRM sync” created." in html
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {raw}"}).status_code == 200

    # A reload is a GET of the same page: no second key, and the value is gone.
    again = client.get(page)
    html = again.content.decode()
    assert again.status_code == 200 and again["Cache-Control"] == "no-store"
    assert again.context["secret"] is None and raw not in html and raw[:16] not in html
    assert GONE in html and "Rotate" in html and key.masked in html
    assert ApiKey.objects.filter(tenant=kit.tenant).count() == before + 1
    assert raw not in _sessions_text()


def test_rotate_redirects_and_the_page_shows_the_new_key_once(api, kit, manager):
    client = signed_in(manager)
    old = kit.key_rows["live"]["write"]
    r = client.post(f"/dashboard/keys/{old.pk}/rotate/")
    old.refresh_from_db()
    new = old.replaced_by
    assert r.status_code == 302 and r["Location"] == f"/dashboard/keys/{new.pk}/created/"
    shown = client.get(r["Location"])
    raw = shown.context["secret"]
    html = shown.content.decode()
    assert raw in html and "Key rotated" in html and old.masked in html
    assert "Revoke old key now" in html and "data-confirm=" in html
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {raw}"}).status_code == 200
    again = client.get(r["Location"]).content.decode()
    assert raw not in again and GONE in again and "Revoke old key now" in again
    assert ApiKey.objects.filter(tenant=kit.tenant, replaced_by__isnull=False).count() == 1


def test_the_secret_waits_in_the_session_encrypted_and_only_until_shown(kit, manager):
    client = signed_in(manager)
    client.post("/dashboard/keys/new/", {"name": "Zapier", "scope": "write", "mode": "test"})
    key = ApiKey.objects.get(tenant=kit.tenant, name="Zapier")
    stash = client.session[SECRETS_SESSION_KEY]
    assert list(stash) == [f"api-key:{key.pk}"]
    raw = client.get(f"/dashboard/keys/{key.pk}/created/").context["secret"]
    # Before the GET the session row held it, encrypted: never the value itself.
    assert stash[f"api-key:{key.pk}"]["s"] and raw not in json.dumps(stash)
    assert client.session[SECRETS_SESSION_KEY] == {}
    assert raw not in _sessions_text()


def test_a_secret_never_fetched_expires(kit, manager):
    client = signed_in(manager)
    client.post("/dashboard/keys/new/", {"name": "Late", "scope": "read", "mode": "live"})
    key = ApiKey.objects.get(tenant=kit.tenant, name="Late")
    session = client.session
    session[SECRETS_SESSION_KEY][f"api-key:{key.pk}"]["at"] -= SECRET_TTL + 1
    session.save()
    r = client.get(f"/dashboard/keys/{key.pk}/created/")
    assert r.context["secret"] is None and GONE in r.content.decode()
    assert client.session[SECRETS_SESSION_KEY] == {}


def test_a_refused_form_creates_nothing_and_redirects_to_the_list(kit, manager):
    client = signed_in(manager)
    before = ApiKey.objects.count()
    r = client.post("/dashboard/keys/new/", {"name": "", "scope": "read", "mode": "live"},
                    follow=True)
    assert r.redirect_chain == [("/dashboard/keys/", 302)]
    assert "A key needs a name" in r.content.decode() and ApiKey.objects.count() == before
    assert SECRETS_SESSION_KEY not in client.session


def test_the_key_page_is_the_tenants_and_the_secret_the_sessions(kit, stranger, manager):
    client = signed_in(manager)
    client.post("/dashboard/keys/new/", {"name": "Ours", "scope": "read", "mode": "live"})
    ours = ApiKey.objects.get(tenant=kit.tenant, name="Ours")
    their_key = stranger.key_rows["live"]["admin"]
    assert client.get(f"/dashboard/keys/{their_key.pk}/created/").status_code == 404
    # Their manager cannot open our key's page; our colleague sees it without the value.
    theirs = user_create(tenant=stranger.tenant, email="sam@stranger.test", role="manager",
                         password=PASSWORD)
    assert signed_in(theirs).get(f"/dashboard/keys/{ours.pk}/created/").status_code == 404
    colleague = user_create(tenant=kit.tenant, email="max@acme.test", role="manager",
                            password=PASSWORD)
    r = signed_in(colleague).get(f"/dashboard/keys/{ours.pk}/created/")
    assert r.status_code == 200 and r.context["secret"] is None
    # Ours is still waiting for us.
    assert client.get(f"/dashboard/keys/{ours.pk}/created/").context["secret"].startswith("sk_live_")


def test_reps_cannot_open_a_key_page(kit, manager):
    rep = user_create(tenant=kit.tenant, email="ray@acme.test", password=PASSWORD)
    key = kit.key_rows["live"]["read"]
    r = signed_in(rep).get(f"/dashboard/keys/{key.pk}/created/", follow=True)
    assert r.redirect_chain[-1][0] == "/dashboard/" and b"Only sales managers" in r.content


def test_revoke_buttons_ask_first(kit, manager):
    client = signed_in(manager)
    client.post(f"/dashboard/keys/{kit.key_rows['live']['read'].pk}/rotate/")
    html = client.get("/dashboard/keys/").content.decode()
    assert html.count("data-confirm=") == html.count(">Revoke</button>") + html.count(
        ">Revoke old key</button>")
    assert "data-confirm=\"Revoke key “live admin”? Clients using it stop working at once." in html
    assert "onclick" not in html and "onsubmit" not in html


def _rotate(client, key_id) -> tuple[ApiKey, str]:
    """Rotates a key on the dashboard; the new row and its value (from the page that shows it)."""
    r = client.post(f"/dashboard/keys/{key_id}/rotate/")
    assert r.status_code == 302, r.content
    new = ApiKey.objects.get(pk=r["Location"].split("/")[-3])
    return new, client.get(r["Location"]).context["secret"]


def test_revoking_old_keys_ends_the_grace_of_the_whole_rotation_chain(api, kit, manager):
    """K1 → K2 → K3, then "Revoke old key" on K3 and "Revoke" on K3: no key of the chain is
    accepted any more (issue 28: K1 kept its 24-hour grace)."""
    client = signed_in(manager)
    k1 = kit.key_rows["live"]["write"]
    raw1 = kit.keys["live"]["write"]
    k2, raw2 = _rotate(client, k1.pk)
    k3, raw3 = _rotate(client, k2.pk)

    def status(raw: str) -> int:
        return api.get("/api/v1/leads", headers={"Authorization": f"Bearer {raw}"}).status_code

    assert [status(raw) for raw in (raw1, raw2, raw3)] == [200, 200, 200]
    r = client.post(f"/dashboard/keys/{k3.pk}/revoke-old/", follow=True)
    assert [status(raw) for raw in (raw1, raw2, raw3)] == [401, 401, 200]
    assert "The 2 old keys of this rotation are revoked" in r.content.decode()
    client.post(f"/dashboard/keys/{k3.pk}/revoke/")
    assert [status(raw) for raw in (raw1, raw2, raw3)] == [401, 401, 401]


def test_revoke_old_key_is_offered_while_any_ancestor_is_in_grace(api, kit, manager):
    """K2 revoked on its own leaves K1 in grace: K3's row still offers "Revoke old key", and it
    ends K1's grace."""
    client = signed_in(manager)
    k1, raw1 = kit.key_rows["live"]["read"], kit.keys["live"]["read"]
    k2, _ = _rotate(client, k1.pk)
    k3, raw3 = _rotate(client, k2.pk)
    client.post(f"/dashboard/keys/{k2.pk}/revoke/")
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {raw1}"}).status_code == 200
    html = client.get("/dashboard/keys/").content.decode()
    row = html[html.index(f'data-key="{k3.pk}"'):]
    row = row[:row.index("</tr>")]
    assert f"/dashboard/keys/{k3.pk}/revoke-old/" in row
    page = client.get(f"/dashboard/keys/{k3.pk}/created/").content.decode()
    assert k1.masked in page and k2.masked not in page and "Revoke old key now" in page
    r = client.post(f"/dashboard/keys/{k3.pk}/revoke-old/", follow=True)
    assert "The old key is revoked" in r.content.decode()
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {raw1}"}).status_code == 401
    assert api.get("/api/v1/leads", headers={"Authorization": f"Bearer {raw3}"}).status_code == 200
