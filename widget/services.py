"""Writes of the widget's look, and the read that every widget load makes."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from core.errors import FieldError, Unprocessable
from tenants.models import Tenant

from .models import (
    DEFAULT_GREETING,
    DEFAULT_PRIMARY,
    DEFAULT_TEXT,
    DEFAULT_TITLE,
    HEX_COLOUR,
    Position,
    WidgetSettings,
)


@dataclass(frozen=True)
class WidgetLook:
    title: str = DEFAULT_TITLE
    greeting: str = DEFAULT_GREETING
    position: str = Position.BOTTOM_RIGHT
    primary_color: str = DEFAULT_PRIMARY
    text_color: str = DEFAULT_TEXT


def widget_look(*, tenant: Tenant) -> WidgetLook:
    """The tenant's widget settings, or the defaults when it never changed them."""
    row = WidgetSettings.objects.filter(tenant=tenant).first()
    if row is None:
        return WidgetLook()
    return WidgetLook(title=row.title, greeting=row.greeting, position=row.position,
                      primary_color=row.primary_color, text_color=row.text_color)


@transaction.atomic
def widget_settings_update(*, tenant: Tenant, title: str, greeting: str, position: str,
                           primary_color: str, text_color: str) -> WidgetSettings:
    """Sets how the tenant's widget looks and greets; the next widget load shows it."""
    title, greeting = (title or "").strip(), (greeting or "").strip()
    details = _widget_settings_errors(title=title, greeting=greeting, position=position,
                                      primary_color=primary_color, text_color=text_color)
    if details:
        raise Unprocessable("The widget settings were not saved.", details=details)
    row, _ = WidgetSettings.objects.select_for_update().get_or_create(tenant=tenant)
    row.title, row.greeting, row.position = title, greeting, position
    row.primary_color, row.text_color = primary_color.lower(), text_color.lower()
    row.updated_at = timezone.now()
    row.save()
    return row


def _widget_settings_errors(*, title: str, greeting: str, position: str, primary_color: str,
                            text_color: str) -> list[FieldError]:
    details = []
    if not title:
        details.append(FieldError("title", "required", "The widget needs a title."))
    elif len(title) > 60:
        details.append(FieldError("title", "too_long", "At most 60 characters."))
    if len(greeting) > 500:
        details.append(FieldError("greeting", "too_long", "At most 500 characters."))
    if position not in Position.values:
        details.append(FieldError("position", "invalid_enum", ", ".join(Position.values)))
    for name, value in (("primary_color", primary_color), ("text_color", text_color)):
        if not HEX_COLOUR.regex.match(value or ""):
            details.append(FieldError(name, "invalid_format", "A colour as #rrggbb."))
    return details
