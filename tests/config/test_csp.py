"""The pages' Content-Security-Policy (config/settings/csp.py), over HTTP with Django's test
client: every page of the dashboard, the admin, the demo, meeting link, home and docs pages
carries the one policy, directive for directive; the REST API under /api/ gets none and does no
CSP work. In a browser, with no violation on any of them: tests/dashboard/test_browser_csp.py."""

from __future__ import annotations

import asyncio

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from config.middleware import PagesContentSecurityPolicyMiddleware
from conversations.links import link_token
from tests.conversations.meeting_helpers import book
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD

HEADER = "Content-Security-Policy"

# What docs/dashboard.md ("Content-Security-Policy") explains, directive by directive: no nonce,
# no hash, no 'unsafe-inline' for scripts or style elements, nothing from another origin.
POLICY = {
    "default-src": {"'self'"},
    "script-src": {"'self'"},
    "style-src": {"'self'"},
    "style-src-attr": {"'unsafe-inline'"},
    "img-src": {"'self'", "data:"},
    "connect-src": {"'self'"},
    "object-src": {"'none'"},
    "base-uri": {"'none'"},
    "frame-ancestors": {"'none'"},
    "form-action": {"'self'"},
}


def directives(header: str) -> dict[str, set[str]]:
    parsed: dict[str, set[str]] = {}
    for part in filter(None, (p.strip() for p in header.split(";"))):
        name, *sources = part.split()
        assert name not in parsed, f"{name} twice in {header!r}"
        parsed[name] = set(sources)
    return parsed


def assert_policy(response) -> None:
    assert HEADER in response, f"no {HEADER} on {response.wsgi_request.path}"
    assert directives(response[HEADER]) == POLICY
    assert "Content-Security-Policy-Report-Only" not in response


@pytest.fixture
def pages(api, kit, manager):
    """The ids in the pages' URLs: a lead with a booked meeting and its conversation."""
    meeting, _ = book(api, kit)
    return {"lead": meeting.lead_id, "conversation": meeting.conversation_id, "meeting": meeting.pk}


def test_every_dashboard_page_carries_the_policy(pages, manager, kit):
    client = signed_in(manager)
    paths = ["/dashboard/", "/dashboard/leads/", f"/dashboard/leads/{pages['lead']}/",
             "/dashboard/conversations/", f"/dashboard/conversations/{pages['conversation']}/",
             "/dashboard/knowledge/", "/dashboard/keys/", "/dashboard/webhooks/",
             "/dashboard/settings/", "/dashboard/settings/widget/preview/",
             "/dashboard/settings/inbox/", "/dashboard/conversations/?view=all&q=hello",
             "/dashboard/calendar/", "/dashboard/analytics/", "/dashboard/profile/",
             "/dashboard/profile/two-factor/backup-codes/", "/dashboard/team/"]
    for path in paths:
        r = client.get(path)
        assert r.status_code == 200, path
        assert_policy(r)
    assert_policy(Client().get("/dashboard/login/"))
    # A redirect and a refused form carry it too: whatever the browser renders.
    assert_policy(Client().get("/dashboard/leads/"))
    r = client.post("/dashboard/settings/origins/", {"origins": "not an origin"})
    assert r.status_code == 400
    assert_policy(r)


def test_the_public_pages_carry_the_policy(pages, kit):
    client = Client()
    for path in ["/", "/docs/errors", f"/demo/?tenant={kit.tenant.public_id}",
                 f"/meetings/{link_token(pages['meeting'], 'reschedule')}/",
                 f"/meetings/{link_token(pages['meeting'], 'cancel')}/"]:
        r = client.get(path)
        assert r.status_code == 200, path
        assert_policy(r)
    assert_policy(client.get("/demo/?tenant=tn_nobody"))  # a 404 page
    assert client.get("/meetings/forged/").status_code == 404


def test_the_admin_carries_the_policy(pages, kit):
    from tenants.models import User

    assert_policy(Client().get("/admin/login/"))
    operator = User.objects.create_superuser(username="op", email="op@service.test",
                                             password=PASSWORD)
    client = signed_in(operator)
    for path in ["/admin/", "/admin/leads/lead/", f"/admin/leads/lead/{pages['lead']}/change/",
                 f"/admin/tenants/tenant/{kit.tenant.pk}/change/", "/admin/tenants/user/add/"]:
        r = client.get(path)
        assert r.status_code == 200, path
        assert_policy(r)


def test_the_api_gets_no_policy_and_does_no_csp_work(kit):
    client = Client()
    for path, headers in [("/api/v1/leads", {"Authorization": f"Bearer {kit.key('read')}"}),
                          ("/api/leads", {"Authorization": f"Bearer {kit.key('read')}"}),
                          ("/api/v1/leads", {}), ("/api/health", {}),
                          (f"/api/widget?tenant={kit.tenant.public_id}", {})]:
        r = client.get(path, headers=headers)
        assert HEADER not in r, path
        # django-csp's request hook never ran: no nonce was even prepared.
        assert not hasattr(r.wsgi_request, "csp_nonce"), path


def test_on_the_async_chain_the_policy_is_set_on_the_loop_and_skipped_on_the_api():
    async def view(request):
        return HttpResponse("ok")

    middleware = PagesContentSecurityPolicyMiddleware(view)
    page, api = RequestFactory().get("/dashboard/"), RequestFactory().get("/api/v1/leads")
    assert directives(asyncio.run(middleware(page))[HEADER]) == POLICY
    response = asyncio.run(middleware(api))
    assert HEADER not in response and not hasattr(api, "csp_nonce")


def test_sign_in_to_the_admin_through_its_form(kit):
    """The admin's login form posts to itself (form-action 'self') and signs in."""
    from tenants.models import User

    User.objects.create_superuser(username="op", email="op@service.test", password=PASSWORD)
    client = Client()
    r = client.post("/admin/login/?next=/admin/", {"username": "op", "password": PASSWORD})
    assert r.status_code == 302 and r["Location"] == "/admin/"
    assert_policy(client.get("/admin/"))
