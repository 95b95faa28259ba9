"""Django's test client for the dashboard's pages, as the suite needs it."""

from __future__ import annotations

from collections.abc import Iterator

from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client as DjangoClient


def _keep_the_test_connection() -> None:
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)


def _kept(chunks: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield from chunks
    finally:
        _keep_the_test_connection()


class Client(DjangoClient):
    """Django's test client reconnects ``close_old_connections`` after each request, which the
    suite keeps disconnected (conftest): on PostgreSQL the next ``api`` request would close the
    test's connection. A streamed response reconnects it once read to its end (Django closes
    the response then): it is disconnected again after that."""

    def request(self, **request):
        try:
            response = super().request(**request)
        finally:
            _keep_the_test_connection()
        if response.streaming:
            response.streaming_content = _kept(response.streaming_content)
        return response


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client
