"""Management commands for operators and scripts: their output is part of the interface."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apikeys.models import ApiKey
from apikeys.services import api_key_authenticate
from tenants.models import Tenant
from tenants.services import tenant_set_allowed_origins


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_create_tenant_json_is_exactly_one_object_of_the_documented_shape(api):
    out = run("create_tenant", "Globex", "--plan", "growth", "--agent", "openai", "--json")
    assert out.count("\n") <= 1
    data = json.loads(out)
    assert set(data) == {"tenant", "adminToken", "keys"}
    assert set(data["tenant"]) == {"id", "publicId", "name", "plan"}
    assert data["tenant"]["name"] == "Globex" and data["tenant"]["plan"] == "growth"
    tenant = Tenant.objects.get(pk=data["tenant"]["id"])
    assert tenant.public_id == data["tenant"]["publicId"] and tenant.agent_provider == "openai"
    for mode in ("live", "test"):
        assert set(data["keys"][mode]) == {"read", "write", "admin"}
        for scope, raw in data["keys"][mode].items():
            assert raw.startswith(f"sk_{mode}_")
            key = api_key_authenticate(raw)
            assert key.scope == scope and key.livemode is (mode == "live")
            assert key.tenant == tenant
    # The printed keys and token really work over HTTP.
    r = api.get("/api/v1/users", headers={"Authorization": f"Bearer {data['keys']['live']['read']}"})
    assert r.status_code == 200
    r = api.post("/api/admin/auth", json={"token": data["adminToken"]})
    assert r.status_code == 200
    # Only hashes are stored.
    assert not ApiKey.objects.filter(hashed_key=data["keys"]["live"]["read"]).exists()
    assert data["adminToken"] not in tenant.admin_token_hash


@pytest.mark.django_db
def test_create_tenant_defaults_and_bad_values():
    data = json.loads(run("create_tenant", "Initech", "--json"))
    assert data["tenant"]["plan"] == "starter"
    with pytest.raises(CommandError):
        run("create_tenant", "X", "--plan", "platinum", "--json")
    with pytest.raises(CommandError):
        run("create_tenant", "   ", "--json")


@pytest.mark.django_db
def test_create_tenant_refuses_a_name_of_two_lines():
    # The name is the sender of every email the tenant's service sends (conversations.mail).
    with pytest.raises(CommandError, match="one line"):
        run("create_tenant", "Acme\nBcc: x@evil.example", "--json")
    assert not Tenant.objects.exists()


@pytest.mark.django_db
def test_create_api_key(kit):
    out = run("create_api_key", "--tenant", str(kit.tenant.pk), "--scope", "write", "--mode",
              "test", "--name", "CRM sync", "--json")
    data = json.loads(out)
    assert data["name"] == "CRM sync" and data["scope"] == "write" and data["mode"] == "test"
    assert data["key"].startswith("sk_test_") and data["status"] == "active"
    assert data["prefix"].startswith("sk_test_") and data["key"] not in data["prefix"]
    assert api_key_authenticate(data["key"]).pk.hex == data["id"].replace("-", "")
    # The public id works as a tenant reference too.
    out = run("create_api_key", "--tenant", kit.tenant.public_id, "--scope", "read", "--mode",
              "live", "--name", "BI", "--json")
    assert json.loads(out)["key"].startswith("sk_live_")
    with pytest.raises(CommandError):
        run("create_api_key", "--tenant", "nope", "--scope", "read", "--mode", "live", "--name", "x")


@pytest.mark.django_db
def test_rotate_then_revoke_old_only(kit):
    old = kit.key_rows["live"]["admin"]
    data = json.loads(run("rotate_api_key", str(old.pk), "--json"))
    new_raw = data["newKey"]["key"]
    assert data["oldKey"]["id"] == str(old.pk)
    assert data["oldKey"]["status"] == "grace_period" and data["oldKey"]["expiresAt"].endswith("Z")
    assert "key" not in data["oldKey"]
    assert api_key_authenticate(kit.key("admin")) is not None
    assert api_key_authenticate(new_raw) is not None

    out = json.loads(run("revoke_api_key", data["newKey"]["id"], "--old-only", "--json"))
    assert [k["id"] for k in out["revoked"]] == [str(old.pk)]
    assert api_key_authenticate(kit.key("admin")) is None
    assert api_key_authenticate(new_raw) is not None
    with pytest.raises(CommandError):  # nothing left in grace
        run("revoke_api_key", data["newKey"]["id"], "--old-only")
    with pytest.raises(CommandError):  # a rotated key cannot be rotated again
        run("rotate_api_key", str(old.pk))


@pytest.mark.django_db
def test_revoke(kit):
    key = kit.key_rows["test"]["read"]
    assert "Revoked" in run("revoke_api_key", str(key.pk))
    assert api_key_authenticate(kit.key("read", "test")) is None
    with pytest.raises(CommandError):
        run("revoke_api_key", "not-a-uuid")


@pytest.mark.django_db
def test_demo_tenant_is_created_once_then_reused(settings, tmp_path, api):
    settings.VAR_DIR = tmp_path
    first = run("demo_tenant")
    assert "Created the demo tenant" in first
    state = json.loads((tmp_path / "demo-tenant.json").read_text())
    assert (tmp_path / "demo-tenant.json").stat().st_mode & 0o077 == 0
    second = run("demo_tenant", "--base-url", "http://localhost:9000")
    assert "Reusing the demo tenant" in second
    # Where the emails go (the tests' own backend here; the embedded default's .eml files below).
    settings.EMAIL_BACKEND, settings.EMAIL_FILE_PATH = "core.mail.EmlFileBackend", "/x/var/mail"
    assert "Emails:        written to /x/var/mail/ as .eml files" in run("demo_tenant")
    assert state["keys"]["live"]["read"] in second and "http://localhost:9000/api/v1/docs" in second
    assert Tenant.objects.filter(name="Demo Company").count() == 1
    r = api.get("/api/v1/users", headers={"Authorization": f"Bearer {state['keys']['live']['read']}"})
    assert [u["email"] for u in r.json()["data"]] == ["rep@demo.example"]


@pytest.mark.django_db
def test_demo_tenant_allows_the_local_origins_and_prints_where_to_go(settings, tmp_path, api):
    """The widget of the demo tenant works at once on pages of the server (127.0.0.1 and
    localhost on its port); the origins are added once, and those a person added are kept."""
    settings.VAR_DIR = tmp_path
    out = run("demo_tenant", "--base-url", "http://127.0.0.1:8123")
    state = json.loads((tmp_path / "demo-tenant.json").read_text())
    public_id = state["tenant"]["publicId"]
    tenant = Tenant.objects.get(public_id=public_id)
    assert tenant.allowed_origins == ["http://127.0.0.1:8123", "http://localhost:8123"]
    for line in ("  Demo page:     http://127.0.0.1:8123/demo/",
                 "  Dashboard:     http://127.0.0.1:8123/dashboard/",
                 "Widget allowed on: http://127.0.0.1:8123, http://localhost:8123"):
        assert line in out
    # The keys and the URLs are in one block: the demo page's line beside the keys.
    lines = out.splitlines()
    assert lines.index("URLs:") > lines.index("API keys:")
    for origin in ("http://localhost:8123", "http://127.0.0.1:8123"):
        r = api.get(f"/api/widget?tenant={public_id}", headers={"Origin": origin})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == origin

    # A person adds their site; a later run on another port adds that port's, removes nothing.
    tenant_set_allowed_origins(tenant=tenant, origins=[*tenant.allowed_origins,
                                                       "https://www.demo.example"])
    run("demo_tenant", "--base-url", "http://127.0.0.1:8123")
    run("demo_tenant", "--base-url", "http://localhost:9000")
    tenant.refresh_from_db()
    assert tenant.allowed_origins == ["http://127.0.0.1:8123", "http://localhost:8123",
                                      "https://www.demo.example", "http://localhost:9000",
                                      "http://127.0.0.1:9000"]
    # Served on every interface, the browser still names it 127.0.0.1 or localhost.
    run("demo_tenant", "--base-url", "http://0.0.0.0:8124")
    tenant.refresh_from_db()
    assert tenant.allowed_origins[-2:] == ["http://127.0.0.1:8124", "http://localhost:8124"]


def test_reset_admin_token_ends_the_old_one(api, kit):
    old = api.post("/api/admin/auth", json={"token": kit.admin_token})
    assert old.status_code == 200
    out = StringIO()
    call_command("reset_admin_token", kit.tenant.public_id, "--json", stdout=out)
    token = json.loads(out.getvalue())["adminToken"]
    assert token != kit.admin_token and token.startswith("at_")
    # The cookie the old token opened is refused; the old token too; the new one signs in.
    assert api.get("/api/admin/auth").status_code == 401
    assert api.post("/api/admin/auth", json={"token": kit.admin_token}).status_code == 401
    assert api.post("/api/admin/auth", json={"token": token}).status_code == 200
    with pytest.raises(CommandError):
        call_command("reset_admin_token", "tn_nobody")


def test_configure_agent_sets_the_reply_limits_and_facts(kit):
    out = StringIO()
    call_command("configure_agent", kit.tenant.public_id, "--max-reply-tokens", "200",
                 "--max-reply-chars", "600", "--turn-seconds", "12", "--product",
                 "Acme CRM for small sales teams", "--pricing-url", "https://acme.example/pricing",
                 "--hours", "Mon-Fri 9-17 CET", "--json", stdout=out)
    summary = json.loads(out.getvalue())
    assert (summary["maxReplyTokens"], summary["maxReplyChars"], summary["turnSeconds"]) == (
        200, 600, 12)
    assert summary["pricingUrl"] == "https://acme.example/pricing"
    kit.tenant.refresh_from_db()
    assert kit.tenant.product_summary == "Acme CRM for small sales teams"
    # One limit alone keeps the others; a value out of range is refused, naming it.
    call_command("configure_agent", kit.tenant.public_id, "--turn-seconds", "30", stdout=StringIO())
    kit.tenant.refresh_from_db()
    assert (kit.tenant.agent_max_reply_chars, kit.tenant.agent_turn_seconds) == (600, 30)
    with pytest.raises(CommandError, match="max_reply_chars"):
        call_command("configure_agent", kit.tenant.public_id, "--max-reply-chars", "10")
