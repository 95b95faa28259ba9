"""A document deleted while the indexer writes it (issue 19): both take the document's row and
the tenant's term-count lock in one order, so they wait for each other instead of deadlocking.
Two real transactions on two connections, on PostgreSQL (SQLite takes one lock for the whole
database, and has no advisory locks)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from knowledge import index, services
from knowledge.models import Chunk, Document
from tests.factories import make_tenant

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql",
                                reason="PostgreSQL only: row and advisory locks (CI runs it)")


def test_a_delete_racing_the_indexer_waits_and_wins(transactional_db, monkeypatch):
    kit = make_tenant("Racer Inc")
    document = services.document_create(tenant=kit.tenant, livemode=True, title="Prices",
                                        type="text", data=b"Plans start at 49 dollars a month.")
    indexer_has_the_row, outcome = threading.Event(), {}
    real_lock = index._lock_tenant_terms

    def slow_lock(cursor, tenant_id, livemode):
        if threading.current_thread().name == "indexer" and not indexer_has_the_row.is_set():
            indexer_has_the_row.set()  # the row is locked (select_for_update came first)
            time.sleep(0.5)  # the delete runs now; before the fix it took the terms lock here
        real_lock(cursor, tenant_id, livemode)

    monkeypatch.setattr(index, "_lock_tenant_terms", slow_lock)

    def run(name, work):
        try:
            outcome[name] = work()
        except Exception as exc:  # a deadlock surfaces here as OperationalError
            outcome[name] = exc
        finally:
            connection.close()

    indexer = threading.Thread(name="indexer", target=run,
                               args=("indexer", lambda: services.document_index(document_id=document.pk)))
    indexer.start()
    assert indexer_has_the_row.wait(10)
    deleter = threading.Thread(name="deleter", target=run,
                               args=("deleter", lambda: services.document_delete(document=document)))
    deleter.start()
    indexer.join(30)
    deleter.join(30)
    assert not isinstance(outcome["indexer"], Exception), outcome
    assert outcome["deleter"] is None, outcome
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
