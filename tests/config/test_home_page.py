"""``/``: the service's home page leads a person to the dashboard and, where ``make run`` made
its demo tenant, to the demo page; ``/favicon.ico`` is the service's icon, cached (issue 29:
"/ has no link to the dashboard or the demo page", "/favicon.ico is a 404 on every page")."""

from __future__ import annotations

import struct

import pytest
from django.core.management import call_command

from tests.dashboard.html import page


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def _links(text: str) -> dict[str, str]:
    return {" ".join(a.text_content().split()): a.get("href") for a in page(text).xpath("//a")}


def test_the_home_page_leads_to_the_dashboard_and_the_demo_page(api, var_dir, db):
    links = _links(api.get("/").text)
    assert links["Dashboard"] == "/dashboard/" and "Demo page" not in links  # no demo tenant here
    call_command("demo_tenant", stdout=open("/dev/null", "w"))  # noqa: SIM115 - what make run does
    r = api.get("/")
    assert r.status_code == 200
    links = _links(r.text)
    assert links["Dashboard"] == "/dashboard/" and links["Demo page"] == "/demo/"
    assert api.get(links["Demo page"]).status_code == 200
    assert api.get(links["Dashboard"]).status_code == 302  # to its sign-in
    assert links["v1 API reference (Swagger UI)"] == "/api/v1/docs"


def test_the_favicon_is_an_icon_cached_for_a_day(api, db):
    r = api.get("/favicon.ico")
    assert r.status_code == 200 and r.headers["content-type"] == "image/x-icon"
    assert r.headers["cache-control"] == "public, max-age=86400"
    # An ICO file of one 32×32 image, a PNG inside.
    reserved, kind, count = struct.unpack("<HHH", r.content[:6])
    assert (reserved, kind, count) == (0, 1, 1)
    width, height = r.content[6], r.content[7]
    size, offset = struct.unpack("<II", r.content[14:22])
    assert (width, height) == (32, 32) and offset + size == len(r.content) < 2048
    assert r.content[offset:offset + 8] == b"\x89PNG\r\n\x1a\n"
