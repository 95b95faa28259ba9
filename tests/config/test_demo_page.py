"""``/demo/``: a page of the service that embeds a tenant's widget as a customer's site does
(the demo tenant of ``make run`` by default, or ``?tenant=<public id>``), and a clean 404 page
when there is no such tenant. The widget on it is driven in tests/widget/test_browser_errors.py."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command

SCRIPT = re.compile(r'<script src="/widget\.js" data-tenant="([^"]+)" async></script>')


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def _demo_public_id(var_dir) -> str:
    return json.loads((var_dir / "demo-tenant.json").read_text())["tenant"]["publicId"]


def test_the_demo_page_embeds_the_demo_tenants_widget(api, var_dir, db):
    call_command("demo_tenant", stdout=open("/dev/null", "w"))  # noqa: SIM115
    r = api.get("/demo/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert SCRIPT.findall(r.text) == [_demo_public_id(var_dir)]
    assert 'href="/dashboard/"' in r.text
    assert "Demo Company" in r.text


def test_the_demo_page_of_another_tenant(api, kit, var_dir):
    r = api.get(f"/demo/?tenant={kit.tenant.public_id}")
    assert r.status_code == 200
    assert SCRIPT.findall(r.text) == [kit.tenant.public_id]
    assert "Acme Inc" in r.text


@pytest.mark.parametrize("query", ["", "?tenant=tn_nobody", "?tenant=%3Cscript%3E", "?tenant="])
def test_no_such_tenant_is_a_clean_404_page(api, var_dir, db, settings, query):
    """No demo tenant yet (``make run`` never ran here), or an unknown tenant: an HTML page that
    says what to do, without a trace or Django's debug page (``make run`` runs with DEBUG on),
    and with no widget on it."""
    settings.DEBUG = True
    r = api.get(f"/demo/{query}")
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "widget.js" not in r.text and "<script>" not in r.text
    assert "Traceback" not in r.text and "URLconf" not in r.text
    assert "No widget to show" in r.text and "make run" in r.text


def test_the_demo_page_404s_once_its_tenant_is_gone(api, var_dir, db):
    call_command("demo_tenant", stdout=open("/dev/null", "w"))  # noqa: SIM115
    from tenants.models import Tenant

    Tenant.objects.filter(public_id=_demo_public_id(var_dir)).delete()
    assert api.get("/demo/").status_code == 404


def test_a_nul_in_the_tenant_is_a_clean_400_page(api, var_dir, db, settings):
    settings.DEBUG = True
    r = api.get("/demo/?tenant=tn_%00")  # refused by the middleware before any query
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
    assert "Traceback" not in r.text and "widget.js" not in r.text
