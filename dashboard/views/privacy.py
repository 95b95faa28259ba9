"""The Privacy page (docs/dashboard.md, "Privacy"; docs/privacy.md): managers and the admin
token. Each of its sections is a template of its own under ``dashboard/privacy/`` with a function
here that gives its context, paged by a query parameter of its own, so that sections sit one
above the other without knowing of each other. "Erasures": what was erased, when, by whom,
and what each removed. "Staff access": who of the staff viewed, exported
or erased a person's data, and when."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from privacy import selectors as privacy_selectors
from tenants import selectors as tenant_selectors

from ..auth import dashboard_view
from .common import page_of, query_without_page

STAFF_ACCESS_PAGE = "access_page"
ERASURES_PAGE = "erasures_page"


@dashboard_view(manage=True)
def privacy_page(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/privacy.html", {
        **_erasures(request),
        **_staff_access(request),
        "section": "privacy",
    })


def _erasures(request: HttpRequest) -> dict[str, Any]:
    """The erasures (asked through the API, the dashboard, a DELETE, or retention), newest
    first, with what each removed."""
    page = page_of(request, request.actor.read(privacy_selectors.erasures), param=ERASURES_PAGE)
    return {"erasures": page, "erasures_query": query_without_page(request, ERASURES_PAGE),
            "erasures_param": ERASURES_PAGE}


def _staff_access(request: HttpRequest) -> dict[str, Any]:
    """The newest lines of the staff access audit, in pages (a count and a page: two queries)."""
    page = page_of(request, request.actor.read(tenant_selectors.staff_accesses),
                   param=STAFF_ACCESS_PAGE)
    return {"staff_access": page,
            "staff_access_query": query_without_page(request, STAFF_ACCESS_PAGE),
            "staff_access_param": STAFF_ACCESS_PAGE}
