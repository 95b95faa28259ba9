"""Scope checks: what a key's scope allows, per HTTP method, on both surfaces."""

from __future__ import annotations

from rest_framework import exceptions, permissions

from apikeys.authentication import Caller
from apikeys.models import Scope, scope_allows

# The specification's scope table: read GET; write GET POST PATCH; admin everything.
METHOD_SCOPE = {
    "GET": Scope.READ,
    "HEAD": Scope.READ,
    "OPTIONS": Scope.READ,
    "POST": Scope.WRITE,
    "PATCH": Scope.WRITE,
    "PUT": Scope.WRITE,
    "DELETE": Scope.ADMIN,
}


def required_scope(view, method: str) -> str:
    """The method's scope, raised to the view's floor (``min_scope``, or per method)."""
    needed = METHOD_SCOPE.get(method, Scope.ADMIN)
    floor = getattr(view, "min_scope", None)
    if isinstance(floor, dict):
        floor = floor.get(method) or floor.get(getattr(view, "action", None) or "")
    if floor and not scope_allows(needed, floor):
        needed = floor
    return needed


class ScopePermission(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        caller = request.user
        if not isinstance(caller, Caller):
            raise exceptions.NotAuthenticated(
                "Authentication required: send 'Authorization: Bearer <API key>'."
            )
        needed = required_scope(view, request.method)
        if not caller.allows(needed):
            raise exceptions.PermissionDenied(
                f"This key's scope ({caller.scope}) does not allow {request.method} here; "
                f"it needs the {needed} scope."
            )
        return True
