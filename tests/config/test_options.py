"""``OPTIONS`` on every route of both URL confs: 200 with the methods the route allows (an admin
key), the surface's 401 without one, never a 500. DRF's ``SimpleMetadata`` failed on the views
that declare no ``serializer_class``."""

from __future__ import annotations

import re

import pytest
from django.urls import URLResolver, get_resolver

# The values a path parameter takes: any string does, OPTIONS looks nothing up; a uuid
# converter's takes a UUID.
_PARAMETER = re.compile(r"<(?:(\w+):)?\w+>")
_NIL_UUID = "00000000-0000-0000-0000-000000000000"


def _routes(urlconf: str) -> list[str]:
    def walk(patterns, prefix: str):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif not str(pattern.pattern).startswith("^"):  # the catch-all 404 views
                yield "/" + _PARAMETER.sub(lambda m: _NIL_UUID if m.group(1) == "uuid" else "x",
                                           prefix + str(pattern.pattern))

    return list(walk(get_resolver(urlconf).url_patterns, ""))


V1_ROUTES, LEGACY_ROUTES = _routes("config.urls_v1"), _routes("config.urls_legacy")
PUBLIC = {"/api/health", "/api/chat", "/api/chat/stream", "/api/chat/typing", "/api/widget",
          "/api/chat/rating", "/api/widget/proactive", f"/api/chat/attachments/{_NIL_UUID}",
          "/api/admin/auth", "/api/schema", "/api/v1/schema", "/api/v1/docs"}


def test_every_route_is_walked():
    assert len(V1_ROUTES) >= 20 and len(LEGACY_ROUTES) >= 15
    assert "/api/v1/webhooks/deliveries/x/retry" in V1_ROUTES
    assert "/api/admin/knowledge-base/x" in LEGACY_ROUTES


@pytest.mark.parametrize("path", V1_ROUTES + LEGACY_ROUTES)
def test_options_answers_with_the_allowed_methods(api, kit, path):
    r = api.request("OPTIONS", path, headers=kit.auth("admin"))
    assert r.status_code == 200, (path, r.status_code, r.text)
    allowed = {m.strip() for m in r.headers["allow"].split(",")}
    assert "OPTIONS" in allowed and allowed - {"OPTIONS"}, allowed
    if r.headers.get("content-type", "").startswith("application/json"):
        assert r.json()["name"]


@pytest.mark.parametrize("path", sorted(set(V1_ROUTES + LEGACY_ROUTES) - PUBLIC))
def test_options_without_a_key_is_the_surfaces_401(api, path):
    r = api.request("OPTIONS", path)
    assert r.status_code == 401, (path, r.status_code, r.text)
    error = r.json()["error"]
    assert error["code"] == "unauthorized" if path.startswith("/api/v1/") else isinstance(error, str)
