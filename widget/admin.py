from django.contrib import admin

from .models import WidgetSettings


@admin.register(WidgetSettings)
class WidgetSettingsAdmin(admin.ModelAdmin):
    list_display = ["tenant", "title", "position", "primary_color", "updated_at"]
    list_filter = ["position"]
    search_fields = ["tenant__name", "tenant__public_id", "title"]
    list_select_related = ["tenant"]
    readonly_fields = ["updated_at"]
