"""The admin's base for records that hold a person's data, and the event log's page.

Every write and every removal of a lead, a conversation and what hangs off them goes through the
services, which keep the events, the webhooks and the daily counts right and which erase a
person everywhere at once (docs/privacy.md). The Django admin calls no service on save or delete:
deleting a lead there sent no ``lead.deleted`` webhook and left the counts wrong ("30 in all"
with 29 listed, issue 28). So the admin shows these records and changes none of them: no add, no
change, no delete, no bulk delete action. Operators act through the dashboard and the API.
"""

from django.contrib import admin

from .models import Event


class ViewOnlyAdmin(admin.ModelAdmin):
    """Lists and shows; adds, changes and deletes nothing (Django answers 403 to each)."""

    show_full_result_count = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ViewOnlyInline(admin.TabularInline):
    """An inline of a ``ViewOnlyAdmin``: its rows are shown, none added, changed or deleted."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Event)
class EventAdmin(ViewOnlyAdmin):
    """The event log is an audit trail: nobody edits it, here or anywhere."""

    list_display = ["occurred_at", "type", "tenant", "livemode", "lead", "description"]
    list_filter = ["type", "livemode", "tenant"]
    search_fields = ["id", "description", "lead__email", "conversation_id"]
    list_select_related = ["tenant", "lead"]
    ordering = ["-occurred_at", "-id"]
    date_hierarchy = "occurred_at"
