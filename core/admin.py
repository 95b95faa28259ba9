from django.contrib import admin

from .models import Event


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """The event log is an audit trail: nobody edits it, here or anywhere."""

    list_display = ["occurred_at", "type", "tenant", "livemode", "lead", "description"]
    list_filter = ["type", "livemode", "tenant"]
    search_fields = ["id", "description", "lead__email", "conversation_id"]
    list_select_related = ["tenant", "lead"]
    ordering = ["-occurred_at", "-id"]
    date_hierarchy = "occurred_at"
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
