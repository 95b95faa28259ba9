"""The project's URLs plus probe views on each surface, to exercise the error machinery
(body parsing, unexpected exceptions) independently of any one domain endpoint."""

from django.urls import path
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


urlpatterns = [
    path("api/v1/_probe", V1Probe.as_view()),
    path("api/_probe", LegacyProbe.as_view()),
    *project_urlpatterns,
]
