"""Request bodies through daphne whatever their framing (config/handlers.py): a chunked body is
read whole (DRF reads nothing from a request without a Content-Length), and the size limit
holds while the body is read, chunked or not, with the surface's envelope."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import pytest

from tests.live import daphne, manage

pytestmark = pytest.mark.live  # daphne

EMBEDDED = {"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1", "SECRET_KEY": None,
            "MAX_REQUEST_BODY_BYTES": "4096"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Chunky", "--json", env=env))
    with daphne(env) as base:
        yield {"base": base, "key": created["keys"]["live"]["write"],
               "admin": created["keys"]["live"]["admin"]}


def _send(base: str, head: str, body_parts: list[bytes], *, chunked: bool) -> tuple[int, dict]:
    """One raw HTTP/1.1 request; (status, JSON body)."""
    url = urlsplit(base)
    if chunked:
        payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in body_parts) + b"0\r\n\r\n"
        framing = "Transfer-Encoding: chunked"
    else:
        payload = b"".join(body_parts)
        framing = f"Content-Length: {len(payload)}"
    request = f"{head}\r\nHost: {url.netloc}\r\n{framing}\r\nConnection: close\r\n\r\n".encode()
    with socket.create_connection((url.hostname, url.port), timeout=20) as sock:
        sock.sendall(request + payload)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    header, _, content = received.partition(b"\r\n\r\n")
    status = int(header.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in header.lower():
        content = _dechunk(content)
    return status, json.loads(content)


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size, _, rest = data.partition(b"\r\n")
        if not int(size, 16):
            break
        out, data = out + rest[:int(size, 16)], rest[int(size, 16) + 2:]
    return out


def _post(stack, path: str) -> str:
    return (f"POST {path} HTTP/1.1\r\nAuthorization: Bearer {stack['key']}\r\n"
            "Content-Type: application/json")


def test_a_chunked_body_is_read_whole(stack):
    body = json.dumps({"email": "chunked@example.com", "name": "Chunk Norris"}).encode()
    status, answer = _send(stack["base"], _post(stack, "/api/v1/leads"),
                           [body[:7], body[7:20], body[20:]], chunked=True)
    assert status == 201, answer
    assert (answer["email"], answer["name"]) == ("chunked@example.com", "Chunk Norris")


@pytest.mark.parametrize("chunked", [True, False])
def test_a_body_over_the_limit_is_413_in_each_surfaces_envelope(stack, chunked):
    big = json.dumps({"email": "big@example.com", "notes": "x" * 5000}).encode()
    parts = [big[i:i + 1000] for i in range(0, len(big), 1000)]
    status, answer = _send(stack["base"], _post(stack, "/api/v1/leads"), parts, chunked=chunked)
    assert status == 413 and answer["error"]["code"] == "invalid_request", answer
    status, answer = _send(stack["base"], _post(stack, "/api/admin/leads"), parts, chunked=chunked)
    assert (status, answer) == (413, {"error": "The request body is too large."})
    status, answer = _send(stack["base"], f"GET /api/v1/leads?limit=100 HTTP/1.1\r\n"
                           f"Authorization: Bearer {stack['key']}", [], chunked=False)
    assert status == 200 and "big@example.com" not in [lead["email"] for lead in answer["data"]]


# No part opens with the declared boundary: Twisted's parser finds no multipart in it.
MALFORMED_MULTIPART = b"this is not a multipart body at all"


def _multipart(stack, path: str, boundary: str = "XyZ") -> str:
    return (f"POST {path} HTTP/1.1\r\nAuthorization: Bearer {stack['admin']}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}")


def test_a_malformed_multipart_body_gets_the_surfaces_envelope(stack):
    """Twisted used to answer it with a bare 400 of its own before Django saw it."""
    status, answer = _send(stack["base"], _multipart(stack, "/api/v1/knowledge-base"),
                           [MALFORMED_MULTIPART], chunked=False)
    assert status == 400 and answer["error"]["code"] == "invalid_request", answer
    status, answer = _send(stack["base"], _multipart(stack, "/api/admin/knowledge-base"),
                           [MALFORMED_MULTIPART], chunked=False)
    assert status == 400 and isinstance(answer["error"], str), answer


def test_a_well_formed_multipart_upload_still_works(stack):
    body = (b"--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nFAQ\r\n"
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"faq.txt\"\r\n"
            b"Content-Type: text/plain\r\n\r\nRefunds within 30 days.\r\n--XyZ--\r\n")
    status, answer = _send(stack["base"], _multipart(stack, "/api/v1/knowledge-base"), [body],
                           chunked=False)
    assert status in (201, 202) and answer["title"] == "FAQ", answer
