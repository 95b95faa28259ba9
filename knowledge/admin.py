from django.contrib import admin

from .models import Document
from .services import document_delete


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    """Documents are uploaded through the API; the admin shows them and their indexing, and
    deletes through the service so that passages and index entries go with the document."""

    list_display = ["title", "tenant", "livemode", "type", "status", "chunk_count", "size",
                    "created_at"]
    list_filter = ["status", "type", "livemode", "tenant"]
    search_fields = ["title", "filename", "tenant__name"]
    fields = ["id", "tenant", "livemode", "title", "type", "filename", "size", "language",
              "search_config", "url", "status", "failure_reason", "chunk_count",
              "character_count", "page_count", "attempts", "created_at", "updated_at", "indexed_at"]
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def delete_model(self, request, obj: Document) -> None:
        document_delete(document=obj)

    def delete_queryset(self, request, queryset) -> None:
        for document in queryset:
            document_delete(document=document)
