"""The dashboard's scoping: every page reads and writes through ``dashboard.auth.Actor``, which
passes the signed-in tenant and the mode shown to the apps' selectors and services. Checked two
ways: the code (no model, no ``Model.objects``, no tenant or mode of a page's own choosing) and
every page (a stranger's staff and the test-mode switch never see this tenant's live rows)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
from django.db.models import Model
from django.http import Http404

import dashboard
from agent.services import agent_test_set_create
from apikeys.services import api_key_create
from conversations.models import Conversation
from conversations.services import canned_reply_create, conversation_tag_add, note_create, tag_create
from dashboard.auth import Actor
from knowledge.services import document_create
from tenants.services import agent_phrasing_add, tenant_set_allowed_origins, user_create
from tests.chat_helpers import chat
from tests.dashboard.client import signed_in
from tests.factories import PASSWORD, make_lead
from webhooks import services as webhook_services
from webhooks.models import Delivery

MODULES = [importlib.import_module(m.name)
           for m in pkgutil.walk_packages(dashboard.__path__, "dashboard.")]


def _tree(module) -> ast.AST:
    return ast.parse(Path(inspect.getfile(module)).read_text())


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_pages_hold_no_model_and_no_manager(module):
    models = [name for name, value in vars(module).items()
              if inspect.isclass(value) and issubclass(value, Model)]
    assert models == [], f"{module.__name__} imports models: read them through selectors"
    managers = [node.lineno for node in ast.walk(_tree(module))
                if isinstance(node, ast.Attribute) and node.attr == "objects"]
    assert managers == [], f"{module.__name__}: Model.objects on lines {managers}"


@pytest.mark.parametrize("module", [m for m in MODULES if m.__name__ != "dashboard.auth"],
                         ids=lambda m: m.__name__)
def test_pages_never_name_a_tenant_or_a_mode(module):
    """Only the actor passes ``tenant`` and ``livemode``. The one exception: a new API key's mode
    comes from the form, for a key of the actor's tenant (``both_modes``: no mode imposed)."""
    for node in ast.walk(_tree(module)):
        if not isinstance(node, ast.Call):
            continue
        names = {kw.arg for kw in node.keywords}
        where = f"{module.__name__}, line {node.lineno}"
        assert "tenant" not in names, where
        unpacked = [kw.value for kw in node.keywords if kw.arg is None]
        assert not any(isinstance(v, ast.Attribute) and v.attr == "owner" for v in unpacked), where
        if "livemode" in names:
            both = [kw.value for kw in node.keywords if kw.arg == "both_modes"]
            assert both and isinstance(both[0], ast.Constant) and both[0].value is True, where


def test_the_actor_passes_its_tenant_and_mode_and_nothing_else(kit, stranger):
    seen = {}

    def selector(*, tenant, livemode, found=None):
        seen.update(tenant=tenant, livemode=livemode)
        return found

    actor = Actor(tenant=kit.tenant, user=None, livemode=False)
    assert actor.read(selector, found=1) == 1 and seen == {"tenant": kit.tenant, "livemode": False}
    with pytest.raises(Http404):
        actor.get(selector)
    with pytest.raises(TypeError):
        actor.read(selector, tenant=stranger.tenant)
    with pytest.raises(TypeError):
        actor.read(selector, livemode=True)
    assert actor.read(lambda *, tenant: tenant, both_modes=True) == kit.tenant


# --- every page, seen by a stranger's staff and in test mode -----------------------------------

@pytest.fixture
def live_rows(api, kit, manager, settings, monkeypatch, django_capture_on_commit_callbacks):
    """One of each of ``kit``'s live rows that a page shows, and what would give each away."""
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    monkeypatch.setattr(webhook_services, "enqueue", lambda delivery_ids: None)
    webhook_services.subscription_create(tenant=kit.tenant, livemode=True, events=["lead.created"],
                                         url="http://127.0.0.1:9/marker-subscription")
    webhook_services.legacy_webhook_create(tenant=kit.tenant, url="http://127.0.0.1:9/marker-legacy",
                                           events=["lead.created"])
    with django_capture_on_commit_callbacks(execute=True):
        lead = make_lead(kit, email="marker@live.example", name="Zed Marker", source="form")
    chat(api, kit, "I want to talk to a human", visitor="v-marker")
    conversation = Conversation.objects.get(tenant=kit.tenant, visitor_id="v-marker")
    assert conversation.status == "handed_off"
    document_create(tenant=kit.tenant, livemode=True, title="Marker playbook", type="text",
                    data=b"Our pricing starts at 10 euros.")
    api_key_create(tenant=kit.tenant, name="Marker key", scope="read", livemode=True)
    test_set = agent_test_set_create(tenant=kit.tenant, livemode=True, name="Marker tests",
                               questions=[{"question": "Marker question?", "expect_fact": "",
                                           "expect_decision": ""}])
    tenant_set_allowed_origins(tenant=kit.tenant, origins=["https://marker.example"])
    agent_phrasing_add(tenant=kit.tenant, decision="person", text="marker night shift phrasing")
    tag = tag_create(tenant=kit.tenant, name="Marker tag")
    conversation_tag_add(conversation=conversation, tag=tag, user=manager)
    canned_reply_create(tenant=kit.tenant, shortcut="marker-reply", content="Marker canned text")
    note_create(tenant=kit.tenant, livemode=True, author=manager, conversation=conversation,
                content="Marker note on the conversation")
    note_create(tenant=kit.tenant, livemode=True, author=manager, lead=lead,
                content="Marker note on the lead")
    delivery = Delivery.objects.get(tenant=kit.tenant, subscription__isnull=False)
    # The staff access audit names both by id on the Privacy page.
    signed_in(manager).get(f"/dashboard/leads/{lead.pk}/")
    signed_in(manager).get(f"/dashboard/conversations/{conversation.pk}/")
    return {
        "ids": {"lead": lead.pk, "conversation": conversation.pk, "delivery": delivery.pk,
                "test_set": test_set.pk},
        "rows": ["marker@live.example", "Zed Marker", str(lead.pk), str(conversation.pk),
                 "Marker playbook", "marker-subscription", "marker-legacy", str(delivery.pk),
                 "Marker tests", str(test_set.pk)],
        # The tenant's own, whichever mode is shown: only strangers must not see these.
        "tenant": ["Marker key", "https://marker.example", kit.tenant.public_id, manager.email,
                   "marker night shift phrasing", "Marker tag", "marker-reply"],
    }


LISTS = ["/dashboard/", "/dashboard/leads/", "/dashboard/leads/?q=marker",
         "/dashboard/leads/?source=form", "/dashboard/conversations/?view=all",
         "/dashboard/conversations/?view=all&q=human",
         "/dashboard/conversations/?view=handed_off", "/dashboard/webhooks/",
         "/dashboard/knowledge/", "/dashboard/analytics/", "/dashboard/agent-tests/",
         "/dashboard/privacy/"]
TENANT_PAGES = ["/dashboard/keys/", "/dashboard/settings/", "/dashboard/settings/widget/preview/",
                "/dashboard/team/", "/dashboard/settings/inbox/"]
ROWS = ["/dashboard/leads/{lead}/", "/dashboard/conversations/{conversation}/",
        "/dashboard/conversations/{conversation}/events/",
        "/dashboard/webhooks/deliveries/{delivery}/", "/dashboard/agent-tests/{test_set}/"]


@pytest.fixture
def viewer(request, kit, stranger, manager):
    """A client of the stranger's manager, or of this tenant's manager on the test-mode switch."""
    if request.param == "stranger":
        return request.param, signed_in(user_create(
            tenant=stranger.tenant, email="sam@stranger.test", role="manager", password=PASSWORD))
    client = signed_in(manager)
    client.post("/dashboard/mode/", {"mode": "test"})
    return request.param, client


VIEWERS = ["stranger", "test mode"]


# Keys and settings belong to the tenant, not to a mode: only the stranger must not see them.
@pytest.mark.parametrize(("viewer", "url"), [(who, url) for who in VIEWERS for url in LISTS]
                         + [("stranger", url) for url in TENANT_PAGES], indirect=["viewer"])
def test_no_page_shows_this_tenants_live_rows_to_others(live_rows, viewer, url):
    who, client = viewer
    response = client.get(url)
    assert response.status_code == 200
    page = response.content.decode()
    hidden = live_rows["rows"] + (live_rows["tenant"] if who == "stranger" else [])
    assert [marker for marker in hidden if marker in page] == []
    if url == "/dashboard/analytics/":
        assert 'id="stat-leads">0<' in page and 'id="stat-conversations">0<' in page


@pytest.mark.parametrize("viewer", VIEWERS, indirect=True)
@pytest.mark.parametrize("url", ROWS)
def test_this_tenants_live_rows_are_404_to_others(live_rows, viewer, url):
    _, client = viewer
    assert client.get(url.format(**live_rows["ids"])).status_code == 404


def test_the_tenants_own_staff_see_every_marker(live_rows, manager):
    """The control: the markers above are on the pages, for the tenant's staff in live mode."""
    client = signed_in(manager)
    pages = "".join(client.get(url).content.decode() for url in LISTS + TENANT_PAGES)
    assert [m for m in live_rows["rows"] + live_rows["tenant"] if m not in pages] == []
    for url in ROWS[:2] + ROWS[3:]:  # the event stream stays open: only its 404s are checked
        assert client.get(url.format(**live_rows["ids"])).status_code == 200
