"""The project's URLs plus probe views on each surface, to exercise the error machinery
(body parsing, unexpected exceptions, each kind of exception a view may raise) independently of
any one domain endpoint."""

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.http import Http404
from django.urls import path
from rest_framework import exceptions as drf
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from config.api.views import LegacyAPIView, V1APIView
from config.urls import handler400, handler403, handler404, handler500  # noqa: F401 - as served
from config.urls import urlpatterns as project_urlpatterns


class _Echo:
    def post(self, request):
        return Response({"received": request.data})

    def get(self, request):
        raise RuntimeError("secret internal detail: password=hunter2")


class V1Probe(_Echo, V1APIView):
    pass


class LegacyProbe(_Echo, LegacyAPIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []


class _Teapot(drf.APIException):
    status_code = 418
    default_detail = "I am a teapot."


class _Unavailable(drf.APIException):
    status_code = 503
    default_detail = "The probe is down."


def _database_down() -> None:
    """A real connection, through the project's PostgreSQL backend, to a port where nothing
    listens: Django's OperationalError, as when the database server is gone."""
    from django.db.utils import ConnectionHandler

    handler = ConnectionHandler({"default": {
        "ENGINE": "config.postgresql", "NAME": "nowhere", "USER": "nobody", "HOST": "127.0.0.1",
        "PORT": "1", "OPTIONS": {"connect_timeout": 2}}})
    handler["default"].ensure_connection()


def _cache_down() -> None:
    """A real read of the default cache; the test points it at a Redis that is not there."""
    from django.core.cache import cache

    cache.get("probe")


def _broker_down() -> None:
    """A real connection to a broker that is not there: kombu's OperationalError."""
    from kombu import Connection

    with Connection("redis://127.0.0.1:1/0") as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)


# Operations that really fail, as they do when a server is gone.
FAILS = {"database-down": _database_down, "cache-down": _cache_down, "broker-down": _broker_down}

RAISES = {
    "not-found": Http404,
    "not-acceptable": drf.NotAcceptable,
    "throttled": lambda: drf.Throttled(wait=7),
    "denied": PermissionDenied,
    "suspicious": SuspiciousOperation,
    "teapot": _Teapot,
    "unavailable": _Unavailable,
}


class _Raise:
    def get(self, request, kind):
        if kind in FAILS:
            FAILS[kind]()
        raise RAISES[kind]()


class V1Raise(_Raise, V1APIView):
    pass


class LegacyRaise(_Raise, LegacyAPIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []


def plain(request, kind):
    """Not a DRF view: what fails here reaches Django's handler500 (``config.views``). An unknown
    ``kind`` is a bug of the view's own (a KeyError)."""
    FAILS[kind]()


urlpatterns = [
    path("api/v1/_plain/<str:kind>", plain),
    path("api/_plain/<str:kind>", plain),
    path("dashboard/_plain/<str:kind>", plain),  # a page
    path("api/v1/_probe", V1Probe.as_view()),
    path("api/_probe", LegacyProbe.as_view()),
    path("api/v1/_raise/<str:kind>", V1Raise.as_view()),
    path("api/_raise/<str:kind>", LegacyRaise.as_view()),
    *project_urlpatterns,
]
