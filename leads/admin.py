from django.contrib import admin

from core.admin import ViewOnlyAdmin

from .models import Lead


@admin.register(Lead)
class LeadAdmin(ViewOnlyAdmin):
    """Operators look leads up; edits and deletions go through the API or the dashboard, whose
    services keep the events, webhooks and daily counts right (core/admin.py)."""

    list_display = ["email", "name", "company", "tenant", "livemode", "status", "score", "source",
                    "created_at"]
    list_filter = ["livemode", "status", "source", "tenant"]
    search_fields = ["email", "name", "company", "tenant__name"]
    list_select_related = ["tenant"]
    ordering = ["-created_at", "-id"]
