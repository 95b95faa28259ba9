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
        raise RAISES[kind]()


class V1Raise(_Raise, V1APIView):
    pass


class LegacyRaise(_Raise, LegacyAPIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []


urlpatterns = [
    path("api/v1/_probe", V1Probe.as_view()),
    path("api/_probe", LegacyProbe.as_view()),
    path("api/v1/_raise/<str:kind>", V1Raise.as_view()),
    path("api/_raise/<str:kind>", LegacyRaise.as_view()),
    *project_urlpatterns,
]
