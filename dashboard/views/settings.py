"""Settings: plan, the agent (provider, model, write-only key, its own example phrasings, reply
limits, the facts it may state), meeting availability, the widget's look, the origins allowed to
embed it, and the notice its visitors accept (with Do Not Track). One form per section, each
posting to its own URL and calling one service. A form refused (its own checks or the service's)
is shown again with what was typed and the reasons beside its fields; the widget's colours get a
warning with their contrast ratio when its text would be hard to read. The agent's form saves an
OpenAI-compatible provider only once it answered, and its "Test connection" asks it without
saving."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from agent import services as agent_services
from core.errors import ServiceError
from privacy import services as privacy_services
from tenants import selectors as tenant_selectors
from tenants import services as tenant_services
from tenants.models import AgentDecision, AgentProvider, EmbeddingsSource, Plan
from widget import colours
from widget import services as widget_services
from widget.models import HEX_COLOUR, LAUNCHER_TEXT_CHARS, LauncherIcon, Position

from ..auth import dashboard_view
from .common import TimeZoneField, attempt, mark_invalid, refuse_on_form

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
    embeddings = forms.ChoiceField(
        choices=EmbeddingsSource.choices, required=False, label="Knowledge search by meaning",
        help_text="With the OpenAI-compatible provider, its /v1/embeddings may rank your "
                  "documents' passages; the local model stays the fallback.")
    embedding_model = forms.CharField(max_length=100, required=False, label="Embedding model",
                                      help_text="For the provider's embeddings, e.g. "
                                                "text-embedding-3-small.")


class PhrasingForm(forms.Form):
    """One of the agent's own example phrasings (docs/agent.md, "Adding phrasings"); its
    fields are prefixed (``phrasing-text``), as the page has other forms with a text field."""

    decision = forms.ChoiceField(choices=AgentDecision.choices, label="The visitor…")
    text = forms.CharField(max_length=tenant_services.AGENT_PHRASING_CHARS, label="Phrasing",
                           widget=forms.TextInput(attrs={
                               "placeholder": "can the night shift pick this up"}))


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
    timezone = TimeZoneField(label="Time zone")
    days = forms.TypedMultipleChoiceField(choices=DAYS, coerce=int, required=False,
                                          widget=forms.CheckboxSelectMultiple, label="Working days")
    start_hour = forms.TypedChoiceField(choices=HOURS[:-1], coerce=int, label="From")
    end_hour = forms.TypedChoiceField(choices=HOURS[1:], coerce=int, label="To")
    minutes = forms.IntegerField(min_value=10, max_value=240, label="Meeting length (minutes)")
    booking_url = forms.URLField(required=False, label="External booking link", assume_scheme="https",
                                 help_text="Replaces the offered slots when set.")


class PresenceForm(forms.Form):
    idle_minutes = forms.IntegerField(
        min_value=tenant_services.PRESENCE_IDLE_MINUTES[0],
        max_value=tenant_services.PRESENCE_IDLE_MINUTES[1], label="Away after (minutes idle)",
        help_text="Someone with the dashboard open and not using it turns away after this.")


def _days(label: str, help_text: str) -> forms.IntegerField:
    low, high = privacy_services.RETENTION_DAYS
    return forms.IntegerField(required=False, min_value=low, max_value=high, label=label,
                              help_text=help_text + " Empty: kept until deleted.")


class RetentionForm(forms.Form):
    retention_conversation_days = _days(
        "Conversations (days)", "Conversations whose last message is older are erased, with "
                                "their messages.")
    retention_lead_days = _days(
        "Leads that never converted (days)", "Leads inactive for longer are erased with their "
                                             "conversations, meetings and emails.")
    retention_event_days = _days("Events (days)", "The history and activity feed older than "
                                                  "this are deleted.")


class WidgetForm(forms.Form):
    """The widget's look. Colours whose text is hard to read on the main colour are saved only
    once confirmed (``accept_low_contrast``), after the page has shown them (a preview and the
    ratio); the pair already saved needs no second confirmation."""

    title = forms.CharField(max_length=60)
    greeting = forms.CharField(max_length=500, required=False, widget=forms.Textarea(attrs={"rows": 2}))
    position = forms.ChoiceField(choices=Position.choices)
    primary_color = forms.RegexField(regex=r"^#[0-9a-fA-F]{6}$", label="Main colour",
                                     widget=forms.TextInput(attrs={"type": "color"}))
    text_color = forms.RegexField(regex=r"^#[0-9a-fA-F]{6}$", label="Text on the main colour",
                                  widget=forms.TextInput(attrs={"type": "color"}))
    accept_low_contrast = forms.BooleanField(required=False, label="Low contrast")
    launcher_icon = forms.ChoiceField(choices=LauncherIcon.choices, label="Launcher icon")
    # Its length and "an icon or a label" are the service's rules, said beside the field.
    launcher_text = forms.CharField(required=False, label="Launcher label",
                                    widget=forms.TextInput(attrs={"maxlength": LAUNCHER_TEXT_CHARS}),
                                    help_text="Shown beside the icon (\u201cChat with us\u201d); "
                                              "empty for the icon alone.")
    rating_enabled = forms.BooleanField(
        required=False, label="Ask for a rating when a conversation closes",
        help_text="One tap (good or bad) and an optional comment, shown on the conversation "
                  "and in Analytics.")

    def __init__(self, *args, saved: tuple[str, str] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.saved = saved

    def clean(self) -> dict:
        data = super().clean()
        pair = (data.get("primary_color"), data.get("text_color"))
        if None in pair or data.get("accept_low_contrast"):
            return data
        if (colours.contrast_ratio(*pair) < colours.MIN_TEXT_CONTRAST
                and tuple(c.lower() for c in pair) != tuple(c.lower() for c in self.saved or ())):
            self.add_error("accept_low_contrast", "The text is hard to read on this main colour "
                           "(see the preview): tick the box to save them anyway, or choose "
                           "other colours.")
        return data


class ConsentForm(forms.Form):
    consent_required = forms.BooleanField(
        required=False, label="Visitors accept a notice before chatting",
        help_text="The widget shows it and sends nothing until the visitor accepts.")
    # No max_length here: the service counts after making the browser's CRLF line breaks one
    # character each, as the textarea's maxlength does.
    consent_text = forms.CharField(
        required=False, label="Notice", strip=False,
        widget=forms.Textarea(attrs={"rows": 3,
                                     "maxlength": tenant_services.CONSENT_TEXT_CHARS}),
        help_text="Plain text; required while visitors must accept it.")
    consent_link = forms.URLField(
        required=False, max_length=tenant_services.CONSENT_LINK_CHARS, assume_scheme="https",
        label="Privacy policy link", help_text="Optional: an https:// page, opened in a new tab.")
    honour_do_not_track = forms.BooleanField(
        required=False, label="Honour Do Not Track and Global Privacy Control",
        help_text="Keep no page, referrer or browser of visitors whose browser asks not to be "
                  "tracked.")


class OriginsForm(forms.Form):
    origins = forms.CharField(required=False, label="Allowed origins",
                              widget=forms.Textarea(attrs={"rows": 4,
                                                           "placeholder": "https://www.example.com"}),
                              help_text="One per line: scheme://host[:port], no path.")


def _initial_forms(tenant, look) -> dict[str, forms.Form]:
    return {
        "plan_form": PlanForm(initial={"plan": tenant.plan}),
        "agent_form": AgentForm(initial={"provider": tenant.agent_provider,
                                         "model": tenant.agent_model,
                                         "base_url": tenant.agent_base_url,
                                         "embeddings": tenant.agent_embeddings,
                                         "embedding_model": tenant.agent_embedding_model}),
        "phrasing_form": PhrasingForm(prefix="phrasing"),
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
        "presence_form": PresenceForm(initial={
            "idle_minutes": max(1, tenant.presence_idle_seconds // 60)}),
        "widget_form": WidgetForm(initial={
            "title": look.title, "greeting": look.greeting, "position": look.position,
            "primary_color": look.primary_color, "text_color": look.text_color,
            "launcher_icon": look.launcher_icon, "launcher_text": look.launcher_text,
            "rating_enabled": look.rating_enabled}),
        "origins_form": OriginsForm(initial={"origins": "\n".join(tenant.allowed_origins)}),
        "retention_form": RetentionForm(initial={
            name: getattr(tenant, name) for name in privacy_services.RETENTION_FIELDS}),
        "consent_form": ConsentForm(initial={
            "consent_required": tenant.consent_required, "consent_text": tenant.consent_text,
            "consent_link": tenant.consent_link,
            "honour_do_not_track": tenant.honour_do_not_track}),
    }


def _contrast(form: WidgetForm) -> dict[str, str] | None:
    """The warning beside the colours when the widget's text on its main colour is under WCAG's
    4.5:1 (the colours the form shows: the saved ones, or the ones just sent), with the pair for
    its preview. The colours are the tenant's brand: such a pair is saved once confirmed
    (``WidgetForm``), and the warning stays beside it."""
    primary, text = (form[name].value() for name in ("primary_color", "text_color"))
    if not all(isinstance(c, str) and HEX_COLOUR.regex.match(c) for c in (primary, text)):
        return None
    ratio = colours.contrast_ratio(primary, text)
    if ratio >= colours.MIN_TEXT_CONTRAST:
        return None
    return {"ratio": colours.shown_ratio(ratio), "minimum": f"{colours.MIN_TEXT_CONTRAST:g}:1",
            "primary": primary, "text": text, "title": form["title"].value() or "Chat"}


def _page(request: HttpRequest, *, status: int = 200, **refused: forms.Form) -> HttpResponse:
    """The settings page; a refused form (``refused``) is shown with its input and errors."""
    tenant = request.actor.tenant  # its own settings: the tenant-wide fields shown in the forms
    look = request.actor.read(widget_services.widget_look, both_modes=True)
    shown = {**_initial_forms(tenant, look), **refused}
    contrast = _contrast(shown["widget_form"])
    if contrast:
        for name in ("primary_color", "text_color"):
            shown["widget_form"].fields[name].widget.attrs["aria-describedby"] = "contrast-warning"
    return render(request, "dashboard/settings.html", {
        "tenant": tenant, **shown, "contrast": contrast,
        "phrasings": _phrasings_by_decision(request),
        "max_phrasings": tenant_services.MAX_AGENT_PHRASINGS,
        "base_url": request.build_absolute_uri("/").rstrip("/"),
        "section": "settings",
    }, status=status)


def _phrasings_by_decision(request: HttpRequest) -> dict[str, object]:
    """The tenant's phrasings under each decision that has any, in the order of the form's
    choices, oldest first."""
    phrasings = request.actor.read(tenant_selectors.agent_phrasings, both_modes=True)
    groups = [{"decision": value, "label": label,
               "items": [p for p in phrasings if p["decision"] == value]}
              for value, label in AgentDecision.choices]
    return {"count": len(phrasings), "groups": [g for g in groups if g["items"]]}


@dashboard_view(manage=True)
def settings_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


# A service names its fields as the tenant's columns; the forms, as the page shows them.
_FORM_FIELDS = {"meeting_timezone": "timezone", "meeting_days": "days",
                "meeting_start_hour": "start_hour", "meeting_end_hour": "end_hour",
                "meeting_minutes": "minutes", "allowed_origins": "origins",
                "agent_base_url": "base_url", "presence_idle_minutes": "idle_minutes"}


def _save(request: HttpRequest, name: str, form: forms.Form, write, success: str) -> HttpResponse:
    """Validates ``form`` and calls ``write(cleaned_data)`` (one service, through the actor);
    a refusal shows the page again with the input kept and each reason beside its field."""
    if not form.is_valid():
        problems = "; ".join(f"{form.fields[f].label or f if f in form.fields else f}: "
                             f"{' '.join(e)}" for f, e in form.errors.items())
        messages.error(request, f"Nothing was saved ({problems}).")
        return _page(request, status=400, **{name: mark_invalid(form)})
    try:
        write(form.cleaned_data)
    except ServiceError as exc:
        detail = "; ".join(f"{d.field.split('[')[0].replace('_', ' ')}: {d.message}"
                           for d in exc.details)
        messages.error(request, exc.message + (f" ({detail})" if detail else ""))
        refuse_on_form(form, exc, fields=_FORM_FIELDS)
        return _page(request, status=400, **{name: mark_invalid(form)})
    messages.success(request, success)
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_plan(request: HttpRequest) -> HttpResponse:
    form = PlanForm(request.POST)
    plan = request.POST.get("plan", "")
    label = dict(Plan.choices).get(plan, plan)
    return _save(request, "plan_form", form, lambda data: request.actor.write(
        tenant_services.tenant_set_plan, both_modes=True, plan=data["plan"]),
        f"Plan changed to {label}.")


def _api_key(data: dict) -> str | None:
    """The form's key as the services take it: "" removes the stored one, None keeps it."""
    return "" if data["clear_key"] else (data["api_key"] or None)


@require_POST
@dashboard_view(manage=True)
def settings_agent(request: HttpRequest) -> HttpResponse:
    """Saves the agent's provider settings (an OpenAI-compatible provider only once it
    answered: ``agent_provider_save``), or, with the form's "Test connection" button, asks the
    provider with the settings typed and says how it answered, saving nothing."""
    form = AgentForm(request.POST)
    if "test" in request.POST:
        return _test_connection(request, form)

    def write(data):
        request.actor.write(agent_services.agent_provider_save, both_modes=True,
                            provider=data["provider"], model=data["model"],
                            base_url=data["base_url"], api_key=_api_key(data),
                            embeddings=data["embeddings"] or None,
                            embedding_model=data["embedding_model"])

    return _save(request, "agent_form", form, write, "Agent settings saved: the provider answered."
                 if request.POST.get("provider") == AgentProvider.OPENAI
                 else "Agent settings saved.")


def _test_connection(request: HttpRequest, form: AgentForm) -> HttpResponse:
    if not form.is_valid():
        messages.error(request, "Nothing was tested: correct the fields marked below.")
        return _page(request, status=400, agent_form=mark_invalid(form))
    data = form.cleaned_data
    if data["provider"] != AgentProvider.OPENAI:
        messages.success(request, "The built-in agent runs inside the service: there is no "
                                  "connection to test.")
        return _page(request, agent_form=form)
    problem = request.actor.read(agent_services.agent_provider_check, both_modes=True,
                                 model=data["model"], base_url=data["base_url"],
                                 api_key=_api_key(data))
    if problem is not None:
        messages.error(request, f"The provider does not answer: {problem.message} Nothing was "
                                "saved.")
        form.add_error(problem.field if problem.field in form.fields else None, problem.message)
        return _page(request, status=400, agent_form=mark_invalid(form))
    typed_key = " Type the key again to save it: it is never shown." if data["api_key"] else ""
    messages.success(request, "Connection tested: the provider answered with these settings. "
                              f"They are not saved yet.{typed_key}")
    return _page(request, agent_form=form)


@require_POST
@dashboard_view(manage=True)
def settings_phrasing_add(request: HttpRequest) -> HttpResponse:
    form = PhrasingForm(request.POST, prefix="phrasing")
    return _save(request, "phrasing_form", form, lambda data: request.actor.write(
        tenant_services.agent_phrasing_add, both_modes=True, **data),
        "Phrasing added: it counts from the next message.")


@require_POST
@dashboard_view(manage=True)
def settings_phrasing_remove(request: HttpRequest, phrasing_id: str) -> HttpResponse:
    """A phrasing already gone (removed in another tab) is said so, above the page."""
    attempt(request, lambda: request.actor.write(
        tenant_services.agent_phrasing_remove, both_modes=True, phrasing_id=phrasing_id),
        "Phrasing removed: it no longer counts from the next message.")
    return redirect("dashboard:settings")


@require_POST
@dashboard_view(manage=True)
def settings_limits(request: HttpRequest) -> HttpResponse:
    return _save(request, "limits_form", LimitsForm(request.POST), lambda data: request.actor.write(
        tenant_services.tenant_set_agent_limits, both_modes=True, **data), "Reply limits saved.")


@require_POST
@dashboard_view(manage=True)
def settings_facts(request: HttpRequest) -> HttpResponse:
    return _save(request, "facts_form", FactsForm(request.POST), lambda data: request.actor.write(
        tenant_services.tenant_set_facts, both_modes=True, **data),
        "The agent's facts are saved.")


@require_POST
@dashboard_view(manage=True)
def settings_meetings(request: HttpRequest) -> HttpResponse:
    return _save(request, "meeting_form", MeetingForm(request.POST), lambda data: request.actor.write(
        tenant_services.tenant_set_meetings, both_modes=True,
        timezone_name=data["timezone"].strip(), days=data["days"],
        start_hour=data["start_hour"], end_hour=data["end_hour"], minutes=data["minutes"],
        booking_url=data["booking_url"]), "Meeting availability saved.")


@require_POST
@dashboard_view(manage=True)
def settings_presence(request: HttpRequest) -> HttpResponse:
    return _save(request, "presence_form", PresenceForm(request.POST), lambda data: request.actor.write(
        tenant_services.tenant_set_presence_idle, both_modes=True, minutes=data["idle_minutes"]),
        "Presence saved.")


@require_POST
@dashboard_view(manage=True)
def settings_widget(request: HttpRequest) -> HttpResponse:
    look = request.actor.read(widget_services.widget_look, both_modes=True)

    def write(data):
        data = {name: value for name, value in data.items() if name != "accept_low_contrast"}
        request.actor.write(widget_services.widget_settings_update, both_modes=True, **data)
        low = _contrast(WidgetForm(initial=data))
        if low:
            messages.warning(request, f"The text on the main colour has a contrast of only "
                                      f"{low['ratio']} (at least {low['minimum']} is readable): "
                                      "see the warning under Chat widget.")

    form = WidgetForm(request.POST, saved=(look.primary_color, look.text_color))
    return _save(request, "widget_form", form, write,
                 "Widget saved: sites show the new look within a minute.")


@require_POST
@dashboard_view(manage=True)
def settings_origins(request: HttpRequest) -> HttpResponse:
    return _save(request, "origins_form", OriginsForm(request.POST), lambda data: request.actor.write(
        tenant_services.tenant_set_allowed_origins, both_modes=True,
        origins=data["origins"].splitlines()), "Allowed origins saved.")


@require_POST
@dashboard_view(manage=True)
def settings_consent(request: HttpRequest) -> HttpResponse:
    return _save(request, "consent_form", ConsentForm(request.POST), lambda data: request.actor.write(
        tenant_services.tenant_set_consent, both_modes=True, **data),
        "Consent settings saved: sites show them within a minute.")


@dashboard_view()
def widget_preview(request: HttpRequest) -> HttpResponse:
    """A page with the tenant's widget on it, served by the service itself (same origin)."""
    return render(request, "dashboard/widget_preview.html", {
        "tenant": request.actor.tenant, "section": "settings"})


@require_POST
@dashboard_view(manage=True)
def settings_retention(request: HttpRequest) -> HttpResponse:
    return _save(request, "retention_form", RetentionForm(request.POST),
                 lambda data: request.actor.write(privacy_services.retention_set, both_modes=True,
                                                  **data), "Retention saved.")
