"""Django's middleware as the project wraps them (config/middleware.py), through the ASGI app: the
REST API skips the browser pages' middleware (no session, no CSRF cookie) yet keeps the security
headers; the pages keep sign-in, CSRF and the trailing-slash redirect."""

from __future__ import annotations

import re

import pytest

from config.middleware import InlineMiddleware, PagesOnlyMiddleware
from tenants.services import user_create
from tests.conftest import ApiClient
from tests.factories import PASSWORD


@pytest.fixture
def browser(db) -> ApiClient:
    client = ApiClient()
    client.validate_schema = False
    return client


def test_api_responses_carry_the_security_headers_and_no_cookie(api, kit):
    r = api.get("/api/v1/leads", headers=kit.auth("read"))
    assert r.status_code == 200
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["X-Frame-Options"] == "DENY"
    assert r.headers["Referrer-Policy"] == "same-origin"
    assert "set-cookie" not in r.headers
    assert "Cookie" not in r.headers.get("Vary", "")


def test_api_errors_carry_the_security_headers(api):
    r = api.get("/api/v1/leads")
    assert r.status_code == 401
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["X-Frame-Options"] == "DENY"


def test_pages_sign_in_with_csrf_and_session_through_asgi(browser, kit):
    user_create(tenant=kit.tenant, email="mia@acme.test", first_name="Mia", last_name="M",
                role="manager", password=PASSWORD)
    page = browser.get("/dashboard/login/")
    assert page.status_code == 200 and page.headers["X-Frame-Options"] == "DENY"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    referer = {"Referer": "https://testserver/dashboard/login/"}

    forged = browser.post("/dashboard/login/", data={"username": "mia@acme.test",
                                                     "password": PASSWORD}, headers=referer)
    assert forged.status_code == 403

    r = browser.post("/dashboard/login/", headers=referer, data={
        "username": "mia@acme.test", "password": PASSWORD, "csrfmiddlewaretoken": token})
    assert r.status_code == 302 and r.headers["Location"] == "/dashboard/"
    assert "sessionid" in browser.cookies
    home = browser.get("/dashboard/")
    assert home.status_code == 200 and "Mia" in home.text


def test_pages_keep_the_trailing_slash_redirect(browser):
    r = browser.get("/dashboard/leads")
    assert r.status_code == 301 and r.headers["Location"] == "/dashboard/leads/"


def test_api_paths_get_no_trailing_slash_redirect(api, kit):
    r = api.get("/api/v1/leads/", headers=kit.auth("read"))
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_wrappers_refuse_middleware_with_hooks_they_do_not_run():
    class Inline(InlineMiddleware):
        wrapped = "django.middleware.csrf.CsrfViewMiddleware"  # has process_view

    class PagesOnly(PagesOnlyMiddleware):
        wrapped = "django.middleware.csrf.CsrfViewMiddleware"

    with pytest.raises(TypeError, match="has process_view, which Inline does not run"):
        Inline(lambda request: None)
    # The page-only wrapper runs view hooks: Django finds them on the wrapper.
    assert PagesOnly(lambda request: None).process_view
