"""How a tenant's chat widget looks and greets visitors, set in the dashboard's settings."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

HEX_COLOUR = RegexValidator(r"^#[0-9a-fA-F]{6}$", "A colour as #rrggbb.")


class Position(models.TextChoices):
    BOTTOM_RIGHT = "bottom-right", "Bottom right"
    BOTTOM_LEFT = "bottom-left", "Bottom left"


class LauncherIcon(models.TextChoices):
    CHAT = "chat", "Chat bubble"
    QUESTION = "question", "Question mark"
    HEADSET = "headset", "Headset"
    NONE = "none", "No icon"


LAUNCHER_TEXT_CHARS = 30

DEFAULT_TITLE = "Chat with us"
DEFAULT_GREETING = "Hi! How can we help you today?"
DEFAULT_PRIMARY = "#2563eb"
DEFAULT_TEXT = "#ffffff"


class WidgetSettings(models.Model):
    """One row per tenant that changed its widget; a tenant without one gets the defaults.

    Kept in the widget app (not as tenant columns) so that the look of the widget changes
    without touching the tenant table that every request reads.
    """

    tenant = models.OneToOneField("tenants.Tenant", on_delete=models.CASCADE, primary_key=True,
                                  related_name="widget_settings")
    title = models.CharField(max_length=60, default=DEFAULT_TITLE)
    greeting = models.CharField(max_length=500, default=DEFAULT_GREETING, blank=True)
    position = models.CharField(max_length=20, choices=Position.choices,
                                default=Position.BOTTOM_RIGHT)
    primary_color = models.CharField(max_length=7, default=DEFAULT_PRIMARY, validators=[HEX_COLOUR])
    text_color = models.CharField(max_length=7, default=DEFAULT_TEXT, validators=[HEX_COLOUR],
                                  help_text="Text on the primary colour (launcher, header, "
                                            "the visitor's messages).")
    # The launcher (docs/widget.md, "Launcher"): an icon, a label beside it, or both.
    launcher_icon = models.CharField(max_length=10, choices=LauncherIcon.choices,
                                     default=LauncherIcon.CHAT)
    launcher_text = models.CharField(max_length=LAUNCHER_TEXT_CHARS, blank=True, default="")
    # The one-question satisfaction rating when a conversation closes (docs/widget.md, "Rating").
    rating_enabled = models.BooleanField(default=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "widget settings"
        verbose_name_plural = "widget settings"

    def __str__(self) -> str:
        return f"Widget of {self.tenant_id}"
