"""The Django admin shows documents and deletes them through the service.

Requests are built with RequestFactory rather than Django's test Client, whose handler would
reconnect ``close_old_connections`` to the request signals and close the test's connection
under the ASGI requests of later tests (see conftest.py)."""

from django.contrib import admin
from django.test import RequestFactory

from knowledge.admin import DocumentAdmin
from knowledge.models import Chunk, Document
from knowledge.retrieval import retrieve
from tenants.models import User
from tests.knowledge_helpers import add_document


def test_the_admin_lists_documents_and_deletes_them_with_their_passages(api, kit):
    first = add_document(api, kit, "Pricing", "Plans start at 49 dollars per seat.")
    second = add_document(api, kit, "Seats", "Seats are billed monthly, in dollars.")
    request = RequestFactory().get("/admin/knowledge/document/")
    request.user = User.objects.create_superuser(username="root@example.com",
                                                 email="root@example.com", password="unused-pw")
    model_admin = DocumentAdmin(Document, admin.site)
    listing = model_admin.changelist_view(request)
    listing.render()
    assert listing.status_code == 200 and b"Pricing" in listing.content
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request, first)

    model_admin.delete_model(request, first)
    model_admin.delete_queryset(request, Document.objects.filter(pk=second.pk))
    assert not Document.objects.exists() and not Chunk.objects.exists()
    assert retrieve(tenant=kit.tenant, livemode=True, query="seat dollars") == []
