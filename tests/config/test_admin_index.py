"""The Django admin's index names every model as a person would: "API keys", "Deliveries"
(Django's own plural of Delivery is "Deliverys").

Built with RequestFactory, as tests/knowledge/test_admin.py explains."""

from django.contrib import admin
from django.test import RequestFactory

from tenants.models import User


def test_the_admin_index_names_models_in_plain_english(db):
    request = RequestFactory().get("/admin/")
    request.user = User.objects.create_superuser(username="root@example.com",
                                                 email="root@example.com", password="unused-pw")
    index = admin.site.index(request)
    index.render()
    page = index.content.decode()
    assert ">API keys<" in page and ">Deliveries<" in page
    assert "Deliverys" not in page and "Api keys" not in page
