"""Django's test client for the dashboard's pages, as the suite needs it."""

from __future__ import annotations

from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client as DjangoClient


class Client(DjangoClient):
    """Django's test client reconnects ``close_old_connections`` after each request, which the
    suite keeps disconnected (conftest): on PostgreSQL the next ``api`` request would close the
    test's connection."""

    def request(self, **request):
        try:
            return super().request(**request)
        finally:
            request_started.disconnect(close_old_connections)
            request_finished.disconnect(close_old_connections)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client
