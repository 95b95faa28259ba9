"""The orjson renderer writes what DRF's JSONRenderer writes, byte for byte."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from django.utils.translation import gettext_lazy
from rest_framework import renderers

from config.api.renderers import JSONRenderer
from leads.models import LeadStatus

PAYLOADS = [
    {"data": [], "pagination": {"page": 1, "limit": 20, "total": 0, "totalPages": 0}},
    {"id": uuid.UUID("12345678-1234-5678-1234-567812345678"), "n": 3, "ok": True, "none": None},
    {"price": Decimal("12.50"), "ratio": 0.1, "big": 2**53},
    {"at": dt.datetime(2026, 11, 22, 1, 2, 3, 456789, tzinfo=dt.UTC),
     "naive": dt.datetime(2026, 1, 1, 12), "day": dt.date(2026, 2, 3), "time": dt.time(4, 5)},
    {"name": "Zoë «Ünïcødé» 東京 🚀", "separators": "a\u2028b\u2029c", "quote": 'x"\\y\n'},
    {"label": gettext_lazy("Qualified"), "status": LeadStatus.QUALIFIED},
    [{"nested": {"deeper": [1, [2, [3]]]}}],
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_same_bytes_as_drf(payload):
    assert JSONRenderer().render(payload) == renderers.JSONRenderer().render(payload)


def test_what_orjson_refuses_goes_to_drf():
    payload = {1: "integer key", "huge": 2**70}
    assert JSONRenderer().render(payload) == renderers.JSONRenderer().render(payload)


def test_indentation_asked_for_is_drf_s():
    payload = {"a": [1, 2]}
    media = "application/json; indent=2"
    assert JSONRenderer().render(payload, media) == renderers.JSONRenderer().render(payload, media)
    assert b"\n  " in JSONRenderer().render(payload, media)


def test_nothing_renders_empty():
    assert JSONRenderer().render(None) == b""


def test_api_responses_use_it(api, kit):
    r = api.get("/api/v1/leads?limit=1", headers=kit.auth("read"))
    assert r.status_code == 200 and r.content.startswith(b'{"data":[]')


@pytest.mark.parametrize("accept", [None, "*/*", "application/json", " application/json "])
def test_any_json_is_answered_json(api, kit, accept):
    headers = kit.auth("read") | ({"Accept": accept} if accept is not None else {})
    r = api.get("/api/v1/leads?limit=1", headers=headers)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"


def test_an_indented_answer_is_still_negotiated(api, kit):
    r = api.get("/api/v1/leads?limit=1", headers=kit.auth("read") | {
        "Accept": "application/json; indent=2"})
    assert r.status_code == 200 and b'\n  "pagination"' in r.content


def test_an_answer_no_renderer_gives_is_refused_in_the_surface_s_envelope(api, kit):
    r = api.get("/api/v1/leads", headers=kit.auth("read") | {"Accept": "text/html"})
    assert r.status_code == 406
    assert r.json()["error"]["code"] == "invalid_request"
    r = api.get("/api/leads", headers=kit.auth("read") | {"Accept": "text/html"})
    assert r.status_code == 406
    assert r.json() == {"error": "Could not satisfy the request Accept header."}


def test_the_format_override_is_still_drf_s(api, kit):
    r = api.get("/api/v1/leads?limit=1&format=json", headers=kit.auth("read"))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    r = api.get("/api/v1/leads?limit=1&format=json", headers=kit.auth("read") | {
        "Accept": "text/html"})
    assert r.status_code == 406  # as DRF answers: the format narrows, Accept still decides
