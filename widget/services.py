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
    LAUNCHER_TEXT_CHARS,
    LauncherIcon,
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
    launcher_icon: str = LauncherIcon.CHAT
    launcher_text: str = ""
    rating_enabled: bool = False


def widget_look(*, tenant: Tenant) -> WidgetLook:
    """The tenant's widget settings, or the defaults when it never changed them."""
    row = WidgetSettings.objects.filter(tenant=tenant).first()
    if row is None:
        return WidgetLook()
    return WidgetLook(title=row.title, greeting=row.greeting, position=row.position,
                      primary_color=row.primary_color, text_color=row.text_color,
                      launcher_icon=row.launcher_icon, launcher_text=row.launcher_text,
                      rating_enabled=row.rating_enabled)


@transaction.atomic
def widget_settings_update(*, tenant: Tenant, title: str, greeting: str, position: str,
                           primary_color: str, text_color: str,
                           launcher_icon: str = LauncherIcon.CHAT, launcher_text: str = "",
                           rating_enabled: bool = False) -> WidgetSettings:
    """Sets how the tenant's widget looks and greets; the next widget load shows it."""
    title, greeting = (title or "").strip(), (greeting or "").strip()
    launcher_text = " ".join((launcher_text or "").split())  # one line
    details = _widget_settings_errors(title=title, greeting=greeting, position=position,
                                      primary_color=primary_color, text_color=text_color)
    details += _launcher_errors(launcher_icon, launcher_text)
    if details:
        raise Unprocessable("The widget settings were not saved.", details=details)
    row, _ = WidgetSettings.objects.select_for_update().get_or_create(tenant=tenant)
    row.title, row.greeting, row.position = title, greeting, position
    row.primary_color, row.text_color = primary_color.lower(), text_color.lower()
    row.launcher_icon, row.launcher_text = launcher_icon, launcher_text
    row.rating_enabled = bool(rating_enabled)
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


def _launcher_errors(icon: str, text: str) -> list[FieldError]:
    """The launcher shows an icon, a label, or both: never nothing to click."""
    if icon not in LauncherIcon.values:
        return [FieldError("launcher_icon", "invalid_enum", ", ".join(LauncherIcon.values))]
    if len(text) > LAUNCHER_TEXT_CHARS:
        return [FieldError("launcher_text", "too_long",
                           f"At most {LAUNCHER_TEXT_CHARS} characters, to fit on a phone.")]
    if icon == LauncherIcon.NONE and not text:
        return [FieldError("launcher_text", "required",
                           "Without an icon the launcher needs a label: choose an icon, or "
                           "write the label.")]
    return []
