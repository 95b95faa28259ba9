from django.contrib import admin

from core.admin import ViewOnlyAdmin

from .models import ApiKey, IdempotencyKey


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are issued and rotated through the services (dashboard, commands): the admin shows
    them and can revoke, but never sees or sets a secret."""

    list_display = ["name", "masked", "tenant", "scope", "livemode", "status", "created_at",
                    "last_used_at"]
    list_filter = ["scope", "livemode", "tenant"]
    search_fields = ["name", "prefix", "tenant__name"]
    readonly_fields = ["id", "tenant", "livemode", "scope", "masked", "created_at", "last_used_at",
                       "expires_at", "replaced_by", "created_by", "status"]
    fields = ["id", "name", "tenant", "scope", "livemode", "masked", "status", "created_at",
              "last_used_at", "expires_at", "revoked_at", "replaced_by", "created_by"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(ViewOnlyAdmin):
    """For support: which keys a client used and what it was answered. Read-only: records are
    written by the v1 views and expire by themselves; a stored answer can name a person, whom
    only the erasure removes."""

    list_display = ["key", "api_key", "state", "response_status", "created_at"]
    list_filter = ["state", "livemode"]
    search_fields = ["key", "api_key__prefix", "tenant__name"]
    readonly_fields = ["id", "tenant", "livemode", "api_key", "key", "fingerprint", "state",
                       "response_status", "response_headers", "created_at", "locked_at"]
    exclude = ["response_body"]
