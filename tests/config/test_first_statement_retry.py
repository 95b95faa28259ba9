"""A connection that breaks on its first statement is replaced once (issue 28, "Dead pooled
connections after an outage"; config/postgresql/base.py; docs/security.md, "Under faults").

The pool checks a connection before it lends it; one that dies between that check and its first
statement (the server restarting right then) is ended here on purpose: the connection is lent,
then its backend is terminated with ``pg_terminate_backend``, then the first statement runs. A
read, and the first statement of a transaction (which nothing can have committed), run again on
a new connection; a write outside a transaction is not sent again (the server might have applied
it before the connection broke), and its caller gets the error.
"""

from __future__ import annotations

import os
import uuid

import psycopg
import pytest
from django.db import OperationalError, connection

from core.models import Event
from leads.models import Lead
from tenants.models import Tenant
from tests.factories import make_lead, make_tenant

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="set DATABASE_URL (PostgreSQL): this ends a PostgreSQL server's backend; the "
               "embedded SQLite has no connection to lose (CI runs the suite on PostgreSQL too)",
    ),
    # Autocommit, as a request runs: the test's own transaction would make every statement one
    # of a transaction begun earlier.
    pytest.mark.django_db(transaction=True),
]


def _lent_and_then_its_backend_ended() -> int:
    """Takes a connection (the pool checks it) and ends its backend before any statement; its
    backend's pid."""
    connection.close()  # back to the pool
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    params = connection.settings_dict
    with psycopg.connect(dbname=params["NAME"], host=params["HOST"], port=params["PORT"] or None,
                         user=params["USER"], password=params["PASSWORD"],
                         autocommit=True) as admin:
        # Waits (up to 5 s) until the backend is gone.
        assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()[0]
    return pid


def test_a_request_whose_first_statement_finds_its_connection_broken_is_answered(api):
    kit = make_tenant()
    make_lead(kit, email="ada@example.com")
    pid = _lent_and_then_its_backend_ended()
    # The API key's lookup (a read, prepared) is the request's first statement.
    r = api.get("/api/v1/leads", headers=kit.auth("read"))
    assert r.status_code == 200, r.text
    assert [lead["email"] for lead in r.json()["data"]] == ["ada@example.com"]
    assert connection.connection.info.backend_pid != pid


def test_the_first_statement_of_a_transaction_runs_again_once():
    kit = make_tenant()
    pid = _lent_and_then_its_backend_ended()
    lead = make_lead(kit, email="grace@example.com")  # the service's transaction
    assert connection.connection.info.backend_pid != pid
    # Written once, with its one event.
    assert list(Lead.objects.filter(email="grace@example.com").values_list("pk", flat=True)) == [
        lead.pk]
    assert Event.objects.filter(lead_id=lead.pk, type="lead.created").count() == 1


def test_a_write_outside_a_transaction_is_not_sent_again():
    kit = make_tenant(name="Before")
    _lent_and_then_its_backend_ended()
    name = f"After {uuid.uuid4().hex[:8]}"
    with pytest.raises(OperationalError):
        Tenant.objects.filter(pk=kit.tenant.pk).update(name=name)  # one UPDATE, autocommit
    connection.close()
    assert Tenant.objects.get(pk=kit.tenant.pk).name == "Before"
