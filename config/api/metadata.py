"""What ``OPTIONS`` answers on every route: the view's name and description, the media types it
renders and parses, and (DRF's ``Allow`` header) its methods. Not DRF's ``actions``: most views
declare no ``serializer_class`` (their inputs are read by the services), and the OpenAPI schema
of each surface (``/api/v1/schema``, ``/api/schema``) describes every body exactly."""

from __future__ import annotations

from rest_framework.metadata import SimpleMetadata


class Metadata(SimpleMetadata):
    def determine_actions(self, request, view):
        return {}

    def determine_metadata(self, request, view):
        found = super().determine_metadata(request, view)
        found.pop("actions", None)
        return found
