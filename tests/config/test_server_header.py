"""No answer names the server's product: daphne runs with ``--no-server-name`` (``serve``,
README's production command, tests/live.py), so it sends no ``Server: daphne``, and Twisted
beneath it adds none either, not even to the bare 400 it answers a request it cannot parse.
``make run``'s daphne (``manage.py serve``): tests/config/test_serve_output.py."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import httpx
import pytest

from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "0", "SECRET_KEY": "server-header",
            "ALLOWED_HOSTS": "127.0.0.1", "V1_REQUIRE_HTTPS": "0"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    manage("migrate", "--noinput", env=env)
    with daphne(env) as base:
        yield base


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/", 200),  # a page
    ("GET", "/dashboard/", 302),  # a redirect
    ("GET", "/api/health", 200),  # the API
    ("GET", "/api/v1/leads", 401),  # an API error
    ("GET", "/static/dashboard/dashboard.js", 200),  # a static file
    ("GET", "/widget.js", 200),
    ("GET", "/nowhere/", 404),
    ("POST", "/", 403),  # refused by the CSRF check
])
def test_no_answer_names_the_server(server, method, path, status):
    r = httpx.request(method, server + path, timeout=10)
    assert r.status_code == status
    assert "server" not in r.headers, r.headers["server"]


def test_not_even_the_bare_answer_to_a_request_twisted_cannot_parse(server):
    host, port = urlsplit(server).hostname, urlsplit(server).port
    with socket.create_connection((host, port), timeout=10) as conn:
        conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        answer = b""
        while chunk := conn.recv(4096):
            answer += chunk
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    assert head.startswith("HTTP/1.1 400")
    assert "server:" not in head.lower(), head
