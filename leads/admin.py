from django.contrib import admin

from .models import Lead


@admin.register(Lead)
class LeadAdmin(admin.ModelAdmin):
    """Operators look leads up; edits go through the API or the dashboard, whose services keep
    the events and daily counts right, so the admin shows leads read-only."""

    list_display = ["email", "name", "company", "tenant", "livemode", "status", "score", "source",
                    "created_at"]
    list_filter = ["livemode", "status", "source", "tenant"]
    search_fields = ["email", "name", "company", "tenant__name"]
    list_select_related = ["tenant"]
    ordering = ["-created_at", "-id"]
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
