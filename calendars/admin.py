"""Calendars in the Django admin: a rep's connection is verified when saved, its password is
write-only; meeting writes are read-only (nothing deletes one: core/admin.py), with a "try again
now" action for failed ones, which goes through the service."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from core.admin import ViewOnlyAdmin
from core.errors import ServiceError
from tenants.models import User

from . import services
from .models import CalendarConnection, MeetingCalendarWrite, WriteStatus


class ConnectionForm(forms.ModelForm):
    url = forms.URLField(label="CalDAV URL", max_length=2048, assume_scheme="https")
    password = forms.CharField(required=False, strip=False,
                               widget=forms.PasswordInput(render_value=False,
                                                          attrs={"autocomplete": "off"}),
                               help_text="App password; write-only. Blank keeps the stored one.")

    class Meta:
        model = CalendarConnection
        fields = ["user", "url", "username"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user"].queryset = User.objects.filter(tenant__isnull=False).order_by("email")

    def clean(self):
        data = super().clean()
        user = data.get("user")
        if user is None or self.errors:
            return data
        try:  # verified (and stored) here, so that a refusal is the form's error
            self.instance = services.calendar_connect(
                tenant=user.tenant, user=user, url=data.get("url", ""),
                username=data.get("username", ""), password=data.get("password", ""))
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from exc
        return data


@admin.register(CalendarConnection)
class CalendarConnectionAdmin(admin.ModelAdmin):
    form = ConnectionForm
    list_display = ("user", "tenant", "calendar_url", "verified_at", "last_error")
    list_filter = ("tenant",)
    search_fields = ("user__email", "url")
    readonly_fields = ("tenant", "calendar_url", "freebusy_query", "verified_at", "last_error",
                       "last_booked_at")

    def save_model(self, request, obj, form, change):
        pass  # calendar_connect stored it when the form was cleaned


@admin.register(MeetingCalendarWrite)
class MeetingCalendarWriteAdmin(ViewOnlyAdmin):
    list_display = ("meeting", "tenant", "host", "status", "attempts", "next_attempt_at",
                    "last_error")
    list_filter = ("status", "tenant")
    actions = ["retry_now"]

    @admin.action(description="Try the failed calendar writes again now")
    def retry_now(self, request, queryset):
        for write in queryset.filter(status=WriteStatus.FAILED):
            services.calendar_write_retry(write=write)
