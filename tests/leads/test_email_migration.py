"""leads 0006: stored addresses in the one form the services now keep (docs/leads.md, "Email
addresses"), the oldest lead first; a lead whose kept form another lead holds keeps its address,
and so does one whose address has none, each named by id (never by address) in a warning.

The rows are written as a database from before the upgrade holds them (around the services, with
their search rows rebuilt from them), then the migration's forward function runs (it takes the
app registry and a schema editor)."""

from __future__ import annotations

import importlib
import logging
from datetime import UTC, datetime, timedelta

from django.apps import apps as django_apps
from django.db import connection

from leads.models import Lead, LeadSearch
from leads.search import lead_search_rebuild
from tests.factories import make_lead

migration = importlib.import_module("leads.migrations.0006_normalise_stored_emails")

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
STORED = [  # (key, address as an older version stored it), oldest first
    ("case", "Ada@Example.COM"),
    ("idn", "bo@Bücher.example"),
    ("look_alike", "ſam@example.com"),  # older than the real sam: it still does not take over
    ("sam", "sam@example.com"),
    ("dotless", "ıan@example.com"),
    ("full_width", "cy@ｂücher.example"),
    ("same_domain", "cy@bücher.example"),  # the same kept form as the older full_width one
]


def _old_database(kit):
    leads = {}
    for minute, (key, email) in enumerate(STORED):
        lead = make_lead(kit, email=f"{key.replace('_', '-')}@placeholder.example",
                         created_at=T0 + timedelta(minutes=minute))
        Lead.objects.filter(pk=lead.pk).update(email=email)
        leads[key] = lead.pk
    lead_search_rebuild(tenant_id=kit.tenant.pk, livemode=True)
    return leads


def _search(api, kit, q):
    r = api.get(f"/api/v1/leads/search?q={q}", headers=kit.auth("read"))
    assert r.status_code == 200, r.text
    return [row["id"] for row in r.json()["data"]]


def test_addresses_take_the_kept_form_and_collisions_keep_theirs(api, kit, stranger, caplog):
    leads = _old_database(kit)
    theirs = make_lead(stranger, email="ada@example.com")  # another tenant's: no collision

    with caplog.at_level(logging.WARNING, logger="salesagent.migrations"):
        migration.normalise_emails(django_apps, connection.schema_editor())

    emails = dict(Lead.objects.filter(tenant=kit.tenant).values_list("pk", "email"))
    assert {key: emails[pk] for key, pk in leads.items()} == {
        "case": "Ada@example.com",
        "idn": "bo@xn--bcher-kva.example",
        "look_alike": "ſam@example.com",
        "sam": "sam@example.com",
        "dotless": "ıan@example.com",
        "full_width": "cy@xn--bcher-kva.example",
        "same_domain": "cy@bücher.example",
    }
    assert Lead.objects.get(pk=theirs.pk).email == "ada@example.com"

    warnings = " ".join(record.getMessage() for record in caplog.records)
    for key in ("look_alike", "same_domain", "dotless"):
        assert str(leads[key]) in warnings
    for key in ("case", "idn", "sam", "full_width"):
        assert str(leads[key]) not in warnings
    assert "@" not in warnings  # ids only: the log holds no address

    # The search rows follow: found by the kept form, no longer by the one it replaced.
    text = LeadSearch.objects.get(lead_id=leads["idn"]).text
    assert "BO@XN--BCHER-KVA.EXAMPLE" in text
    assert _search(api, kit, "xn--bcher-kva") == [f"lead_{leads[k].hex}"
                                                  for k in ("full_width", "idn")]
    assert _search(api, kit, "bo@bü") == []


def test_it_changes_nothing_in_a_database_of_kept_forms(kit):
    make_lead(kit, email="ada@example.com", name="Ada")
    before = list(LeadSearch.objects.values_list("lead_id", "text"))
    migration.normalise_emails(django_apps, connection.schema_editor())
    assert list(Lead.objects.values_list("email", flat=True)) == ["ada@example.com"]
    assert list(LeadSearch.objects.values_list("lead_id", "text")) == before
