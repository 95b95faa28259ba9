"""The home page's install checklist: a tick per step (allowed origin, widget seen on a site, first
conversation, an API key created, a webhook added), each open step linking to where it is done,
read in a fixed number of queries, gone once every step is done; the same in Live and Test. The
keys a tenant is created with (``make run`` prints them) count as created."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from apikeys.models import ApiKey
from apikeys.services import api_key_revoke
from config.management.commands.create_tenant import create_tenant_with_keys
from tenants.models import Tenant
from tenants.services import user_create
from tests.chat_helpers import chat
from tests.dashboard.client import signed_in
from tests.factories import PASSWORD

STEPS = ["Allowed origin set", "Widget seen on a site", "First conversation", "API key created",
         "Webhook added"]
# The order in which the test does them: the default keys are there from the start.
DONE_ORDER = ["API key created", "Allowed origin set", "Widget seen on a site",
              "First conversation", "Webhook added"]
LINKS = {
    "Allowed origin set": "/dashboard/settings/#origins",
    "Widget seen on a site": "/dashboard/settings/#widget",
    "First conversation": "/dashboard/settings/widget/preview/",
    "API key created": "/dashboard/keys/",
    "Webhook added": "/dashboard/webhooks/",
}


@pytest.fixture
def fresh(db, settings):
    """A tenant as ``manage.py create_tenant`` makes it (its default keys), with a manager and a
    rep; webhooks may target the test's own machine."""
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    made = create_tenant_with_keys(name="Acme", plan="growth", agent="builtin")
    tenant = Tenant.objects.get(pk=made["tenant"]["id"])
    manager = user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", role="manager",
                          password=PASSWORD)
    rep = user_create(tenant=tenant, email="ray@acme.test", first_name="Ray", password=PASSWORD)
    return {"tenant": tenant, "keys": made["keys"], "manager": manager, "rep": rep}


def checklist(page: str) -> dict[str, str]:
    """Each step's state as the page shows it: "Done", or the open step's link or note."""
    section = page.split('id="install"', 1)[1].split("</section>", 1)[0]
    steps = {}
    for item in re.findall(r'<li class="(?:done|todo)">(.*?)</li>', section, re.S):
        label = re.search(r"<strong>(.*?)</strong>", item).group(1)
        state = re.search(r'aria-label="(Done|To do)"', item).group(1)
        link = re.search(r'<a class="small" href="([^"]+)">', item)
        steps[label] = state if state == "Done" else (link.group(1) if link else
                                                      " ".join(re.sub(r"<[^>]+>", " ", item).split()))
    return steps


def test_each_step_ticks_when_done_and_the_checklist_goes_when_all_are(
        fresh, api, django_assert_max_num_queries):
    tenant, client = fresh["tenant"], signed_in(fresh["manager"])
    client.get("/dashboard/")
    # 15: with the check that a person with two-factor sign-in passed it (dashboard.auth).
    with django_assert_max_num_queries(15) as first:
        page = client.get("/dashboard/").content.decode()
    queries = len(first.captured_queries)
    assert checklist(page) == {**LINKS, "API key created": "Done"} and "1 of 5 done" in page

    def done_now(step: str, count: int) -> None:
        with django_assert_max_num_queries(queries):
            page = client.get("/dashboard/").content.decode()
        if count == len(STEPS):
            assert 'id="install"' not in page and "Put your sales agent to work" not in page
            return
        assert checklist(page)[step] == "Done" and f"{count} of 5 done" in page, step
        assert {s for s, state in checklist(page).items() if state == "Done"} == set(
            DONE_ORDER[:count])

    client.post("/dashboard/settings/origins/", {"origins": "https://shop.acme.example"})
    done_now("Allowed origin set", 2)
    assert api.get(f"/api/widget?tenant={tenant.public_id}&visitorId=v_1").status_code == 200
    done_now("Widget seen on a site", 3)
    r = api.post("/api/v1/chat", json={"message": "Hello", "visitorId": "v_1"},
                 headers={"Authorization": f"Bearer {fresh['keys']['live']['write']}"})
    assert r.status_code == 200, r.text
    done_now("First conversation", 4)
    client.post("/dashboard/webhooks/subscriptions/new/",
                {"url": "http://127.0.0.1:9/hooks", "events": ["lead.created"]})
    done_now("Webhook added", 5)


def test_a_rep_sees_what_a_manager_does_and_test_mode_shows_the_same(fresh):
    client = signed_in(fresh["rep"])
    steps = checklist(client.get("/dashboard/").content.decode())
    assert steps["First conversation"] == LINKS["First conversation"]  # open to every member
    for step in ("Allowed origin set", "Widget seen on a site", "Webhook added"):
        assert steps[step] == step + " A manager does this step.", steps[step]
    assert steps["API key created"] == "Done"
    client.post("/dashboard/mode/", {"mode": "test"})
    assert checklist(client.get("/dashboard/").content.decode()) == steps


def test_another_tenants_progress_is_not_this_ones(fresh, kit, api):
    """``kit`` (another tenant) has a conversation, keys and a visit; the fresh tenant has none
    of them once its own keys are revoked."""
    api.get(f"/api/widget?tenant={kit.tenant.public_id}&visitorId=v_2")
    api.post("/api/v1/chat", json={"message": "Hello", "visitorId": "v_2"}, headers=kit.auth("write"))
    for key in ApiKey.objects.filter(tenant=fresh["tenant"]):
        api_key_revoke(key=key)
    steps = checklist(signed_in(fresh["manager"]).get("/dashboard/").content.decode())
    assert steps == LINKS


def test_the_keys_the_tenant_was_created_with_count_as_created(fresh):
    """Issue 29: the checklist said "API key created" was not done after ``make run`` had
    printed six keys. Any key that works now counts, of either mode; none left working (each
    revoked, or an old one past its grace period) opens the step again."""
    client = signed_in(fresh["manager"])
    assert checklist(client.get("/dashboard/").content.decode())["API key created"] == "Done"
    keys = list(ApiKey.objects.filter(tenant=fresh["tenant"]).order_by("livemode", "scope"))
    assert len(keys) == 6 and {k.created_by for k in keys} == {"create_tenant"}
    for key in keys[:-1]:
        api_key_revoke(key=key)
    client.post("/dashboard/mode/", {"mode": "test"})  # the one left is live: the same here
    assert checklist(client.get("/dashboard/").content.decode())["API key created"] == "Done"
    ApiKey.objects.filter(pk=keys[-1].pk).update(expires_at=timezone.now() - timedelta(hours=1))
    assert checklist(client.get("/dashboard/").content.decode())["API key created"] == LINKS[
        "API key created"]
    client.post("/dashboard/keys/new/", {"name": "CRM sync", "scope": "read", "mode": "test"})
    assert checklist(client.get("/dashboard/").content.decode())["API key created"] == "Done"


def test_counts_of_one_are_singular(api, kit, manager):
    """Issue 29: "1 conversations"."""
    chat(api, kit, "Hi, I'm Ann, ann@hooli.com", visitor="v_1")
    page = " ".join(signed_in(manager).get("/dashboard/").content.decode().split())
    assert "<b>1</b><span>active conversation</span>" in page
    assert "<b>1</b><span>new lead in 7 days</span>" in page
    assert "<b>0</b><span>handoffs assigned to you</span>" in page
    chat(api, kit, "Hello", visitor="v_2")
    page = " ".join(signed_in(manager).get("/dashboard/").content.decode().split())
    assert "<b>2</b><span>active conversations</span>" in page
