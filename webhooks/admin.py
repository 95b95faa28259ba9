"""The admin over webhooks, for the service's operators: read-only, because every write goes
through ``webhooks.services`` (URL checks, re-enabling that forgets a failure streak, the delivery
pipeline's claims); operators may delete a receiver, as ``subscription_delete`` does. Deliveries
hold the bodies sent, which name a person: nothing deletes them here either (core/admin.py).
Signing secrets are never shown, only whether one is set."""

from django.contrib import admin

from core.admin import ViewOnlyAdmin, ViewOnlyInline

from .models import Delivery, DeliveryAttempt, LegacyWebhook, Subscription


class _SecretSet:
    @admin.display(boolean=True, description="Secret set")
    def has_secret(self, obj) -> bool:
        return bool(obj.secret_encrypted)


@admin.register(Subscription)
class SubscriptionAdmin(_SecretSet, admin.ModelAdmin):
    list_display = ["url", "tenant", "livemode", "status", "failing_since", "created_at"]
    list_filter = ["status", "livemode"]
    search_fields = ["url", "tenant__name"]
    readonly_fields = ["id", "tenant", "livemode", "url", "events", "has_secret", "status",
                       "disabled_reason", "disabled_at", "failing_since", "created_at", "updated_at"]
    fields = ["id", "tenant", "livemode", "url", "events", "has_secret", "status",
              "disabled_reason", "disabled_at", "failing_since", "created_at", "updated_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(LegacyWebhook)
class LegacyWebhookAdmin(_SecretSet, admin.ModelAdmin):
    list_display = ["url", "tenant", "livemode", "active", "created_at"]
    list_filter = ["active", "livemode"]
    search_fields = ["url", "tenant__name"]
    readonly_fields = ["id", "tenant", "livemode", "url", "events", "has_secret", "active",
                       "created_at", "updated_at"]
    fields = ["id", "tenant", "livemode", "url", "events", "has_secret", "active", "created_at",
              "updated_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class DeliveryAttemptInline(ViewOnlyInline):
    model = DeliveryAttempt
    fields = ["number", "trigger", "attempted_at", "status_code", "success", "duration_ms",
              "error", "remote_address"]
    readonly_fields = fields


@admin.register(Delivery)
class DeliveryAdmin(ViewOnlyAdmin):
    list_display = ["id", "surface", "status", "tenant", "livemode", "attempt_count",
                    "last_status_code", "next_attempt_at", "created_at"]
    list_filter = ["status", "surface", "livemode"]
    search_fields = ["id", "tenant__name", "subscription__url", "legacy_webhook__url"]
    list_select_related = ["tenant"]
    raw_id_fields = ["event", "subscription", "legacy_webhook"]
    inlines = [DeliveryAttemptInline]

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]
