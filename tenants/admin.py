from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from core.admin import ViewOnlyAdmin

from .models import Invitation, Tenant, User


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ["name", "public_id", "plan", "agent_provider", "created_at"]
    list_filter = ["plan", "agent_provider"]
    search_fields = ["name", "public_id"]
    readonly_fields = ["id", "public_id", "has_agent_api_key", "has_admin_token", "created_at",
                       "updated_at"]
    fields = ["id", "name", "public_id", "plan", "agent_provider", "agent_model", "agent_base_url",
              "has_agent_api_key", "has_admin_token", "allowed_origins", "meeting_timezone",
              "meeting_days", "meeting_start_hour", "meeting_end_hour", "meeting_minutes",
              "booking_url", "qualification_min_score", "qualification_min_bant",
              "default_deal_value", "require_two_factor", "created_at", "updated_at"]

    @admin.display(boolean=True, description="Agent API key set")
    def has_agent_api_key(self, obj: Tenant) -> bool:
        return obj.has_agent_api_key

    @admin.display(boolean=True, description="Admin token set")
    def has_admin_token(self, obj: Tenant) -> bool:
        return bool(obj.admin_token_hash)


@admin.register(User)
class TenantUserAdmin(UserAdmin):
    list_display = ["username", "email", "tenant", "role", "is_staff", "is_active"]
    list_filter = ["tenant", "role", "is_staff", "is_active"]
    search_fields = ["username", "email", "first_name", "last_name"]
    fieldsets = [*UserAdmin.fieldsets, ("Tenant", {"fields": ["tenant", "role"]})]


@admin.register(Invitation)
class InvitationAdmin(ViewOnlyAdmin):
    """Read-only: managers invite, resend and revoke on the dashboard's Team page, which emits
    the events; the link's token is never shown (only its hash is stored)."""

    list_display = ["email", "tenant", "role", "invited_by", "sent_at", "expires_at",
                    "accepted_at", "revoked_at"]
    list_filter = ["tenant", "role"]
    search_fields = ["email"]
    fields = ["id", "tenant", "email", "role", "invited_by", "created_at", "sent_at",
              "expires_at", "accepted_at", "revoked_at", "user"]
    readonly_fields = fields
