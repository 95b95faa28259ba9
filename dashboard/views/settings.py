"""Settings: plan, the agent (provider, model, write-only key, reply limits, the facts it may
state), meeting availability, the widget's
look and the origins allowed to embed it. One form per section, each posting to its own URL."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from tenants import services as tenant_services
from tenants.models import AgentProvider, Plan
from widget import services as widget_services
from widget.models import Position

from ..auth import dashboard_view
from .common import attempt

DAYS = [(0, "Mon"), (1, "Tue"), (2, "Wed"), (3, "Thu"), (4, "Fri"), (5, "Sat"), (6, "Sun")]
HOURS = [(h, f"{h:02d}:00") for h in range(25)]


class PlanForm(forms.Form):
    plan = forms.ChoiceField(choices=Plan.choices)


class AgentForm(forms.Form):
    provider = forms.ChoiceField(choices=AgentProvider.choices, label="Provider")
    model = forms.CharField(max_length=100, required=False, label="Model")
    base_url = forms.URLField(required=False, label="Base URL", assume_scheme="https",
                              help_text="Optional: any OpenAI-compatible server.")
    api_key = forms.CharField(required=False, max_length=500, label="API key",
                              widget=forms.PasswordInput(render_value=False,
                                                         attrs={"autocomplete": "off"}),
                              help_text="Write-only: leave blank to keep the current key.")
    clear_key = forms.BooleanField(required=False, label="Remove the stored key")


class LimitsForm(forms.Form):
    max_reply_tokens = forms.IntegerField(min_value=tenant_services.REPLY_TOKENS[0],
                                          max_value=tenant_services.REPLY_TOKENS[1],
                                          label="Tokens per reply")
    max_reply_chars = forms.IntegerField(min_value=tenant_services.REPLY_CHARS[0],
                                         max_value=tenant_services.REPLY_CHARS[1],
                                         label="Characters per reply",
                                         help_text="A reply ends on a whole sentence within this.")
    turn_seconds = forms.IntegerField(min_value=tenant_services.TURN_SECONDS[0],
                                      max_value=tenant_services.TURN_SECONDS[1],
                                      label="Seconds per turn",
                                      help_text="Past this the visitor gets what is ready.")


class FactsForm(forms.Form):
    product_summary = forms.CharField(required=False, label="What you sell",
                                      max_length=tenant_services.PRODUCT_SUMMARY_CHARS,
                                      widget=forms.Textarea(attrs={"rows": 3}))
    pricing_url = forms.URLField(required=False, label="Pricing page", assume_scheme="https")
    business_hours = forms.CharField(required=False, max_length=200, label="Business hours")


class MeetingForm(forms.Form):
    timezone = forms.CharField(max_length=64, label="Time zone")
    days = forms.TypedMultipleChoiceField(choices=DAYS, coerce=int, required=False,
                                          widget=forms.CheckboxSelectMultiple, label="Working days")
    start_hour = forms.TypedChoiceField(choices=HOURS[:-1], coerce=int, label="From")
    end_hour = forms.TypedChoiceField(choices=HOURS[1:], coerce=int, label="To")
    minutes = forms.IntegerField(min_value=10, max_value=240, label="Meeting length (minutes)")
    booking_url = forms.URLField(required=False, label="External booking link", assume_scheme="https",
                                 help_text="Replaces the offered slots when set.")


class WidgetForm(forms.Form):
    title = forms.CharField(max_length=60)
    greeting = forms.CharField(max_length=500, required=False, widget=forms.Textarea(attrs={"rows": 2}))
    position = forms.ChoiceField(choices=Position.choices)
    primary_color = forms.RegexField(regex=r"^#[0-9a-fA-F]{6}$", label="Main colour",
                                     widget=forms.TextInput(attrs={"type": "color"}))
    text_color = forms.RegexField(regex=r"^#[0-9a-fA-F]{6}$", label="Text on the main colour",
                                  widget=forms.TextInput(attrs={"type": "color"}))


class OriginsForm(forms.Form):
    origins = forms.CharField(required=False, label="Allowed origins",
                              widget=forms.Textarea(attrs={"rows": 4,
                                                           "placeholder": "https://www.example.com"}),
                              help_text="One per line: scheme://host[:port], no path.")


@dashboard_view(manage=True)
def settings_page(request: HttpRequest) -> HttpResponse:
    tenant = request.actor.tenant  # its own settings: the tenant-wide fields shown in the forms
    look = request.actor.read(widget_services.widget_look, both_modes=True)
    return render(request, "dashboard/settings.html", {
        "tenant": tenant,
        "plan_form": PlanForm(initial={"plan": tenant.plan}),
        "agent_form": AgentForm(initial={"provider": tenant.agent_provider,
                                         "model": tenant.agent_model,
                                         "base_url": tenant.agent_base_url}),
        "limits_form": LimitsForm(initial={"max_reply_tokens": tenant.agent_max_reply_tokens,
                                           "max_reply_chars": tenant.agent_max_reply_chars,
                                           "turn_seconds": tenant.agent_turn_seconds}),
        "facts_form": FactsForm(initial={"product_summary": tenant.product_summary,
                                         "pricing_url": tenant.pricing_url,
                                         "business_hours": tenant.business_hours}),
        "meeting_form": MeetingForm(initial={
            "timezone": tenant.meeting_timezone, "days": tenant.meeting_days or [0, 1, 2, 3, 4],
            "start_hour": tenant.meeting_start_hour, "end_hour": tenant.meeting_end_hour,
            "minutes": tenant.meeting_minutes, "booking_url": tenant.booking_url}),
        "widget_form": WidgetForm(initial={
            "title": look.title, "greeting": look.greeting, "position": look.position,
            "primary_color": look.primary_color, "text_color": look.text_color}),
        "origins_form": OriginsForm(initial={"origins": "\n".join(tenant.allowed_origins)}),
        "base_url": request.build_absolute_uri("/").rstrip("/"),
        "section": "settings",
    })


def _invalid(request: HttpRequest, form: forms.Form) -> HttpResponse:
    problems = "; ".join(f"{form.fields[f].label or f if f in form.fields else f}: {' '.join(e)}"
                         for f, e in form.errors.items())
    messages.error(request, f"Nothing was saved ({problems}).")
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_plan(request: HttpRequest) -> HttpResponse:
    form = PlanForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    plan = form.cleaned_data["plan"]
    attempt(request, lambda: request.actor.write(tenant_services.tenant_set_plan, both_modes=True,
                                                 plan=plan),
            f"Plan changed to {Plan(plan).label}.")
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_agent(request: HttpRequest) -> HttpResponse:
    form = AgentForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    data = form.cleaned_data
    api_key = "" if data["clear_key"] else (data["api_key"] or None)
    attempt(request, lambda: request.actor.write(
        tenant_services.tenant_set_agent, both_modes=True, provider=data["provider"],
        model=data["model"], base_url=data["base_url"], api_key=api_key), "Agent settings saved.")
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_limits(request: HttpRequest) -> HttpResponse:
    form = LimitsForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    attempt(request, lambda: request.actor.write(
        tenant_services.tenant_set_agent_limits, both_modes=True, **form.cleaned_data),
        "Reply limits saved.")
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_facts(request: HttpRequest) -> HttpResponse:
    form = FactsForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    attempt(request, lambda: request.actor.write(
        tenant_services.tenant_set_facts, both_modes=True, **form.cleaned_data),
        "The agent's facts are saved.")
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_meetings(request: HttpRequest) -> HttpResponse:
    form = MeetingForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    data = form.cleaned_data
    attempt(request, lambda: request.actor.write(
        tenant_services.tenant_set_meetings, both_modes=True,
        timezone_name=data["timezone"].strip(), days=data["days"],
        start_hour=data["start_hour"], end_hour=data["end_hour"], minutes=data["minutes"],
        booking_url=data["booking_url"]), "Meeting availability saved.")
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_widget(request: HttpRequest) -> HttpResponse:
    form = WidgetForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    attempt(request, lambda: request.actor.write(widget_services.widget_settings_update,
                                                 both_modes=True, **form.cleaned_data),
            "Widget saved: sites show the new look within a minute.")
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_origins(request: HttpRequest) -> HttpResponse:
    form = OriginsForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    origins = form.cleaned_data["origins"].splitlines()
    attempt(request, lambda: request.actor.write(tenant_services.tenant_set_allowed_origins,
                                                 both_modes=True, origins=origins),
            "Allowed origins saved.")
    return redirect("dashboard:settings")


@dashboard_view()
def widget_preview(request: HttpRequest) -> HttpResponse:
    """A page with the tenant's widget on it, served by the service itself (same origin)."""
    return render(request, "dashboard/widget_preview.html", {
        "tenant": request.actor.tenant, "section": "settings"})
