from django.contrib import admin

from .models import ApiKey


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
