"""No path in the Django admin changes or deletes a person's data around the services (issue 28;
core/admin.py): a staff superuser sees leads, conversations, messages, meetings, emails, events,
webhook deliveries and idempotency records, and every add, change and delete of them, one by one
or with the bulk action, is refused; the counts the dashboard shows stay right.

Over HTTP with the dashboard's test client (tests/dashboard/client.py), signed in as a superuser
of no tenant, as an operator is."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.db import models

from conversations.models import Conversation, Meeting, Message, OutboundEmail
from core.admin import ViewOnlyAdmin
from core.models import Event
from leads.models import Lead
from tenants.models import User
from tests.conversations.meeting_helpers import book
from tests.dashboard.client import signed_in
from webhooks import services as webhooks
from webhooks.models import Delivery

PERSONAL = [Lead, Conversation, Message, Meeting, OutboundEmail, Event, Delivery]


@pytest.fixture
def operator(db):
    return User.objects.create_superuser(username="root@example.com", email="root@example.com",
                                         password="unused-pw")


@pytest.fixture
def everything(api, kit, rep, settings, monkeypatch, django_capture_on_commit_callbacks):
    """A visitor who chatted and booked (lead, conversation, messages, meeting, emails, events),
    with a webhook subscription (deliveries), and a lead created with an Idempotency-Key."""
    monkeypatch.setattr(webhooks, "enqueue", lambda delivery_ids: None)  # no broker here
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    webhooks.subscription_create(tenant=kit.tenant, livemode=True,
                                 url="http://127.0.0.1:9/in", events=["lead.created"])
    with django_capture_on_commit_callbacks(execute=True):
        meeting, _ = book(api, kit)
        r = api.post("/api/v1/leads", json={"email": "kim@initech.io", "name": "Kim"},
                     headers={**kit.auth("write"), "Idempotency-Key": "admin-read-only-1"})
    assert r.status_code == 201, r.text
    for model in PERSONAL:
        assert model.objects.exists(), model
    return meeting


def _url(obj: models.Model, view: str = "") -> str:
    meta = obj._meta
    base = f"/admin/{meta.app_label}/{meta.model_name}/"
    return f"{base}{obj.pk}/{view}" if view else base


def _counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in PERSONAL}


def test_the_admin_shows_a_persons_records_and_changes_none(everything, operator, kit):
    client = signed_in(operator)
    before = _counts()
    for model in PERSONAL:
        obj = model.objects.order_by("pk").first()
        listing = client.get(_url(obj))
        assert listing.status_code == 200, model
        assert b'value="delete_selected"' not in listing.content, model
        assert client.get(_url(obj, "change/")).status_code == 200, model  # viewing stays
        assert client.post(_url(obj, "change/"), {}).status_code == 403, model
        assert client.get(_url(obj, "delete/")).status_code == 403, model
        assert client.post(_url(obj, "delete/"), {"post": "yes"}).status_code == 403, model
        assert client.get(_url(obj).replace(f"{obj.pk}/", "") + "add/").status_code == 403, model
        # The bulk delete, posted by hand although the page offers none: Django runs no action
        # it does not list (it shows the list again, or says "No action selected" where the
        # admin has other actions) and deletes nothing.
        r = client.post(_url(obj), {"action": "delete_selected", "_selected_action": [obj.pk],
                                    "post": "yes"})
        assert r.status_code in (200, 302) and b"Are you sure" not in r.content, model
    assert _counts() == before
    assert not Event.objects.filter(type__endswith=".deleted").exists()


def test_the_counts_stay_right(everything, operator, manager):
    """What the issue measured: a lead deleted in the admin left "30 in all" with 29 listed."""
    lead = Lead.objects.get(email="sam@umbrella.io")
    signed_in(operator).post(_url(lead, "delete/"), {"post": "yes"})
    page = signed_in(manager).get("/dashboard/leads/").content.decode()
    assert "2 in all" in page and "sam@umbrella.io" in page and "kim@initech.io" in page


def test_every_admin_of_a_persons_records_is_view_only():
    """Structural, so that a model registered later is held to it too: every admin of a model
    that is a person's record or points at one changes and deletes nothing."""
    def personal(model) -> bool:
        return model in PERSONAL or any(
            isinstance(field, models.ForeignKey) and field.related_model in (Lead, Conversation,
                                                                              Meeting)
            for field in model._meta.get_fields())

    found = {model: model_admin for model, model_admin in admin.site._registry.items()
             if personal(model)}
    assert set(PERSONAL) <= set(found)
    for model, model_admin in found.items():
        assert isinstance(model_admin, ViewOnlyAdmin), model
        for inline in model_admin.inlines:
            assert not inline.can_delete, inline
