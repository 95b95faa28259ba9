"""Root URL configuration: the v1 surface, the legacy surface, the admin and the docs pages."""

from django.contrib import admin
from django.urls import include, path

from config import metrics, views
from conversations.views import meeting_link
from widget.views import widget_js

urlpatterns = [
    path("", include("config.urls_v1")),  # before the legacy catch-all under /api/
    path("", include("config.urls_legacy")),
    path("admin/", admin.site.urls),
    path("widget.js", widget_js, name="widget-js"),
    path("dashboard/", include("dashboard.urls")),
    path("meetings/<str:token>/", meeting_link, name="meeting-link"),
    path("docs/errors", views.error_reference, name="docs-errors"),
    path("demo/", views.demo, name="demo"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("metrics", metrics.metrics, name="metrics"),  # docs/operations.md
    path("", views.home, name="home"),
]

handler400 = views.bad_request
handler403 = views.permission_denied
handler404 = views.page_not_found
handler500 = views.server_error
