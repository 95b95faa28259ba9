"""Legacy authentication: Bearer keys or the admin-token cookie of POST /api/admin/auth."""

from http.cookies import SimpleCookie

import pytest
from django.core import signing
from django.test import override_settings

from apikeys.authentication import ADMIN_COOKIE_NAME
from tenants.services import tenant_reset_admin_token

AUTH = "/api/admin/auth"


def _set_cookie(response) -> SimpleCookie:
    cookie = SimpleCookie()
    cookie.load(response.headers["set-cookie"])
    return cookie


def test_login_sets_an_http_only_seven_day_cookie(api, kit):
    r = api.post(AUTH, json={"token": kit.admin_token})
    assert r.status_code == 200, r.content
    assert r.json()["authenticated"] is True
    assert r.json()["tenant"] == {"id": str(kit.tenant.pk), "name": "Acme Inc"}
    assert r.json()["expiresAt"].endswith("Z")
    morsel = _set_cookie(r)[ADMIN_COOKIE_NAME]
    assert morsel["httponly"] is True
    assert morsel["max-age"] == str(7 * 24 * 3600)
    assert morsel["samesite"] == "Lax"
    assert morsel["secure"] is True  # https://testserver
    assert morsel["path"] == "/"


def test_cookie_is_not_secure_over_plain_http(api, kit):
    r = api.post(AUTH, json={"token": kit.admin_token}, base_url="http://testserver")
    assert r.status_code == 200
    assert not _set_cookie(r)[ADMIN_COOKIE_NAME]["secure"]


def test_the_cookie_authenticates_admin_endpoints_on_live_data(api, kit):
    api.post(AUTH, json={"token": kit.admin_token})
    r = api.get(AUTH)
    assert r.status_code == 200
    assert r.json()["via"] == "admin_cookie"
    assert r.json()["livemode"] is True
    assert r.json()["scope"] == "admin"


@pytest.mark.parametrize("payload", [{"token": "at_wrong"}, {"token": "sk_live_x"}, {"token": ""}])
def test_a_wrong_token_is_401_and_sets_no_cookie(api, kit, payload):
    r = api.post(AUTH, json=payload)
    assert r.status_code in (400, 401)
    assert isinstance(r.json()["error"], str)
    assert "set-cookie" not in r.headers
    if payload["token"]:
        assert r.status_code == 401


def test_missing_token_is_400(api, kit):
    r = api.post(AUTH, json={})
    assert r.status_code == 400
    assert r.json() == {"error": "token: This field is required."}


def test_without_credentials_admin_endpoints_are_401(api, kit):
    r = api.get(AUTH)
    assert r.status_code == 401
    assert r.json() == {"error": "Authentication required: send 'Authorization: Bearer <API key>'."}


def test_tampered_or_expired_cookie_is_401(api, kit):
    api.cookies.set(ADMIN_COOKIE_NAME, "garbage", domain="testserver")
    assert api.get(AUTH).status_code == 401


def test_cookie_expires_after_seven_days(api, kit, monkeypatch):
    api.post(AUTH, json={"token": kit.admin_token})
    assert api.get(AUTH).status_code == 200
    real_time = signing.time.time
    monkeypatch.setattr(signing.time, "time", lambda: real_time() + 7 * 24 * 3600 + 5)
    assert api.get(AUTH).status_code == 401


def test_resetting_the_admin_token_ends_sessions(api, kit):
    api.post(AUTH, json={"token": kit.admin_token})
    tenant_reset_admin_token(tenant=kit.tenant)
    assert api.get(AUTH).status_code == 401
    assert api.post(AUTH, json={"token": kit.admin_token}).status_code == 401


def test_logout_clears_the_cookie(api, kit):
    api.post(AUTH, json={"token": kit.admin_token})
    r = api.delete(AUTH)
    assert r.status_code == 204
    assert _set_cookie(r)[ADMIN_COOKIE_NAME]["max-age"] == "0"


def test_admin_endpoints_need_the_admin_scope(api, kit):
    for scope, expected in (("read", 403), ("write", 403), ("admin", 200)):
        r = api.get(AUTH, headers=kit.auth(scope))
        assert r.status_code == expected
        if expected == 403:
            assert "admin" in r.json()["error"]


def test_a_test_key_acts_on_test_data(api, kit):
    r = api.get(AUTH, headers=kit.auth("admin", "test"))
    assert r.json()["livemode"] is False and r.json()["via"] == "api_key"


def test_a_stranger_token_opens_the_strangers_tenant_only(api, kit, stranger):
    r = api.post(AUTH, json={"token": stranger.admin_token})
    assert r.json()["tenant"]["id"] == str(stranger.tenant.pk)


@override_settings(V1_REQUIRE_HTTPS=True)
def test_legacy_surface_accepts_plain_http(api, kit):
    assert api.get(AUTH, headers=kit.auth("admin"), base_url="http://testserver").status_code == 200
