"""v1 authentication and scopes, exactly per the specification's Authentication section."""

import pytest
from django.test import override_settings
from django.utils import timezone

from apikeys.models import ApiKey
from apikeys.services import api_key_revoke, api_key_revoke_old, api_key_rotate

USERS = "/api/v1/users"


def _unauthorized(r):
    assert r.status_code == 401, r.content
    assert r.json()["error"]["code"] == "unauthorized"
    assert r.json()["error"]["doc_url"].endswith("/docs/errors#unauthorized")
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token sk_live_abc",
        "Bearer sk_live_abc def",
        "Bearer sk_live_unknownkeyunknownkeyunknownkeyunknown12",
        "Bearer sk_prod_abcdefghijklmnopqrstuvwxyz0123456789abcd",
        "Bearer " + "x" * 5000,
    ],
)
def test_missing_malformed_or_unknown_keys_are_401(api, kit, header):
    headers = {"Authorization": header} if header is not None else {}
    _unauthorized(api.get(USERS, headers=headers))


def test_a_valid_key_authenticates_and_records_last_use(api, kit):
    row = kit.key_rows["live"]["read"]
    assert row.last_used_at is None
    assert api.get(USERS, headers=kit.auth("read")).status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None


def test_revoked_key_is_401(api, kit):
    api_key_revoke(key=kit.key_rows["live"]["admin"])
    _unauthorized(api.get(USERS, headers=kit.auth("admin")))


def test_rotation_keeps_both_keys_for_24_hours_then_only_the_new(api, kit):
    old = kit.key_rows["live"]["read"]
    new, raw = api_key_rotate(key=old)
    new_auth = {"Authorization": f"Bearer {raw}"}
    assert api.get(USERS, headers=new_auth).status_code == 200
    assert api.get(USERS, headers=kit.auth("read")).status_code == 200  # grace period
    old.refresh_from_db()
    assert old.status == "grace_period"
    assert old.replaced_by_id == new.pk
    grace_left = old.expires_at - timezone.now()
    assert timezone.timedelta(hours=23, minutes=59) < grace_left <= timezone.timedelta(hours=24)
    # 24 hours later (the grace period's end, moved to the past) the old key never works again.
    ApiKey.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timezone.timedelta(seconds=1))
    _unauthorized(api.get(USERS, headers=kit.auth("read")))
    assert api.get(USERS, headers=new_auth).status_code == 200


def test_revoke_old_key_early(api, kit):
    old = kit.key_rows["live"]["read"]
    new, raw = api_key_rotate(key=old)
    api_key_revoke_old(key=new)
    _unauthorized(api.get(USERS, headers=kit.auth("read")))
    assert api.get(USERS, headers={"Authorization": f"Bearer {raw}"}).status_code == 200


def test_only_an_active_key_can_be_rotated(kit):
    from core.errors import Conflict

    old = kit.key_rows["live"]["read"]
    api_key_rotate(key=old)
    with pytest.raises(Conflict):
        api_key_rotate(key=old)


@pytest.mark.parametrize(
    "scope, method, allowed",
    [
        ("read", "GET", True),
        ("read", "POST", False),
        ("read", "PATCH", False),
        ("read", "DELETE", False),
        ("write", "GET", True),
        ("write", "POST", True),
        ("write", "PATCH", True),
        ("write", "DELETE", False),
        ("admin", "DELETE", True),
    ],
)
def test_scope_table(api, kit, scope, method, allowed):
    r = api.request(method, USERS, headers=kit.auth(scope), json={} if method != "GET" else None)
    if allowed:
        # Past the scope check: GET works, the other methods are not offered by this endpoint.
        assert r.status_code in (200, 405), r.content
        if r.status_code == 405:
            assert r.json()["error"]["code"] == "invalid_request"
    else:
        assert r.status_code == 403
        assert r.json()["error"]["code"] == "forbidden"
        assert scope in r.json()["error"]["message"]


@override_settings(V1_REQUIRE_HTTPS=True)
def test_plain_http_is_rejected_with_a_v1_error(api, kit):
    r = api.get(USERS, headers=kit.auth("read"), base_url="http://testserver")
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "forbidden"
    assert "HTTPS" in r.json()["error"]["message"]
    assert api.get(USERS, headers=kit.auth("read")).status_code == 200  # https://testserver


@override_settings(V1_REQUIRE_HTTPS=True)
def test_forwarded_proto_is_ignored_unless_trusted(api, kit):
    headers = {**kit.auth("read"), "X-Forwarded-Proto": "https"}
    r = api.get(USERS, headers=headers, base_url="http://testserver")
    assert r.status_code == 403


@override_settings(V1_REQUIRE_HTTPS=True, SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"))
def test_forwarded_proto_is_honoured_when_trusted(api, kit):
    headers = {**kit.auth("read"), "X-Forwarded-Proto": "https"}
    assert api.get(USERS, headers=headers, base_url="http://testserver").status_code == 200


@override_settings(V1_REQUIRE_HTTPS=False)
def test_plain_http_is_allowed_when_https_is_not_required(api, kit):
    r = api.get(USERS, headers=kit.auth("read"), base_url="http://testserver")
    assert r.status_code == 200


def test_a_key_of_one_tenant_never_sees_another(api, kit, stranger):
    from tests.factories import UserFactory

    mine = UserFactory(tenant=kit.tenant)
    r = api.get(USERS, headers=stranger.auth("admin"))
    assert mine.email not in r.text
    assert api.get(f"{USERS}/user_{mine.pk.hex}", headers=stranger.auth("admin")).status_code == 404
