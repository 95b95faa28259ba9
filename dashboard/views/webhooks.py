"""Webhooks: v1 subscriptions (the secret shown once, like an API key's value), the legacy
webhook settings (the secret write-only), the delivery log with its attempts, and the failed
deliveries with a Retry button. Every read is a ``webhooks.selectors`` query and every write one
``webhooks.services`` call, through the actor: the page adds forms and messages, no webhook logic
of its own."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from webhooks import selectors as webhook_selectors
from webhooks import services as webhook_services
from webhooks.envelopes import LEGACY_EVENT_TYPES, V1_EVENT_TYPES
from webhooks.models import DeliveryStatus, Surface

from ..auth import dashboard_view
from .common import attempt, page_of, query_without_page, safe_next

LOG_PAGE_SIZE = 20
FAILED_SHOWN = 20


def _choices(types: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(t, t) for t in types]


class SubscriptionForm(forms.Form):
    url = forms.CharField(max_length=2048, label="URL",
                          widget=forms.URLInput(attrs={"placeholder": "https://crm.example.com/hooks"}))
    events = forms.MultipleChoiceField(choices=_choices(V1_EVENT_TYPES),
                                       widget=forms.CheckboxSelectMultiple)
    secret = forms.CharField(required=False, max_length=webhook_services.SECRET_MAX_LENGTH, strip=True,
                             widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
                             help_text="Optional: blank generates one (shown once).")


class LegacyWebhookForm(forms.Form):
    url = forms.CharField(max_length=2048, label="URL",
                          widget=forms.URLInput(attrs={"placeholder": "https://crm.example.com/hooks"}))
    events = forms.MultipleChoiceField(choices=_choices(LEGACY_EVENT_TYPES),
                                       widget=forms.CheckboxSelectMultiple)
    secret = forms.CharField(required=False, max_length=webhook_services.SECRET_MAX_LENGTH, strip=True,
                             widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))
    active = forms.BooleanField(required=False, initial=True)


def _form_error(request: HttpRequest, form: forms.Form) -> None:
    detail = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
    messages.error(request, f"Please check the form ({detail}).")


def _subscription(request: HttpRequest, subscription_id: str):
    return request.actor.get(webhook_selectors.subscription_get, subscription_id=subscription_id)


def _legacy_webhook(request: HttpRequest, webhook_id: str):
    return request.actor.get(webhook_selectors.legacy_webhook_get, webhook_id=webhook_id)


def _delivery(request: HttpRequest, delivery_id: str):
    return request.actor.get(webhook_selectors.delivery_get, delivery_id=delivery_id)


def _secret_shown_once(request: HttpRequest, receiver, secret: str, kind: str) -> HttpResponse:
    response = render(request, "dashboard/webhook_created.html", {
        "receiver": receiver, "secret": secret, "kind": kind, "section": "webhooks"})
    response["Cache-Control"] = "no-store"
    return response


@dashboard_view(manage=True)
def webhook_index(request: HttpRequest) -> HttpResponse:
    actor = request.actor
    status = request.GET.get("status")
    if status not in DeliveryStatus.values:
        status = None
    log = page_of(request, actor.read(webhook_selectors.delivery_log_with_receivers, status=status),
                  LOG_PAGE_SIZE)
    failed = actor.read(webhook_selectors.failed_deliveries_with_receivers, limit=FAILED_SHOWN)
    legacy = [{"webhook": w, "form": LegacyWebhookForm(
        initial={"url": w.url, "events": w.events, "active": w.active}, prefix=f"l{w.pk.hex[:8]}")}
        for w in actor.read(webhook_selectors.legacy_webhook_list)]
    return render(request, "dashboard/webhooks.html", {
        "section": "webhooks",
        "subscriptions": list(actor.read(webhook_selectors.subscription_list)),
        "subscription_form": SubscriptionForm(), "legacy": legacy,
        "legacy_form": LegacyWebhookForm(prefix="new"), "failed": failed, "log": log,
        "status": status, "statuses": DeliveryStatus.choices, "query": query_without_page(request),
    })


@require_POST
@dashboard_view(manage=True)
def subscription_create(request: HttpRequest) -> HttpResponse:
    form = SubscriptionForm(request.POST)
    if not form.is_valid():
        _form_error(request, form)
        return redirect("dashboard:webhooks")
    data = form.cleaned_data
    created = attempt(request, lambda: request.actor.write(
        webhook_services.subscription_create, url=data["url"], events=data["events"],
        secret=data["secret"] or None), "Subscription created.")
    if created is None:
        return redirect("dashboard:webhooks")
    return _secret_shown_once(request, *created, kind="subscription")


@require_POST
@dashboard_view(manage=True)
def subscription_set_status(request: HttpRequest, subscription_id: str) -> HttpResponse:
    subscription = _subscription(request, subscription_id)
    status = request.POST.get("status", "")
    done = "enabled" if status == "active" else "disabled"
    attempt(request, lambda: webhook_services.subscription_update(subscription=subscription,
                                                                  status=status),
            f"Subscription to {subscription.url} {done}.")
    return redirect("dashboard:webhooks")


@require_POST
@dashboard_view(manage=True)
def subscription_delete(request: HttpRequest, subscription_id: str) -> HttpResponse:
    subscription = _subscription(request, subscription_id)
    attempt(request, lambda: webhook_services.subscription_delete(subscription=subscription),
            f"Subscription to {subscription.url} deleted.")
    return redirect("dashboard:webhooks")


@require_POST
@dashboard_view(manage=True)
def legacy_webhook_create(request: HttpRequest) -> HttpResponse:
    form = LegacyWebhookForm(request.POST, prefix="new")
    if not form.is_valid():
        _form_error(request, form)
        return redirect(reverse("dashboard:webhooks") + "#legacy")
    data = form.cleaned_data
    created = attempt(request, lambda: request.actor.write(
        webhook_services.legacy_webhook_create, url=data["url"], events=data["events"],
        secret=data["secret"] or None), "Legacy webhook saved.")
    if created is None:
        return redirect(reverse("dashboard:webhooks") + "#legacy")
    webhook, secret = created
    if data["secret"]:
        # The staff chose the secret: nothing new to show.
        return redirect(reverse("dashboard:webhooks") + "#legacy")
    return _secret_shown_once(request, webhook, secret, kind="legacy")


@require_POST
@dashboard_view(manage=True)
def legacy_webhook_update(request: HttpRequest, webhook_id: str) -> HttpResponse:
    webhook = _legacy_webhook(request, webhook_id)
    form = LegacyWebhookForm(request.POST, prefix=f"l{webhook.pk.hex[:8]}")
    if not form.is_valid():
        _form_error(request, form)
        return redirect(reverse("dashboard:webhooks") + "#legacy")
    data = form.cleaned_data
    # The secret is write-only: blank keeps the stored one.
    changes = {"url": data["url"], "events": data["events"], "active": data["active"]}
    if data["secret"]:
        changes["secret"] = data["secret"]
    attempt(request, lambda: webhook_services.legacy_webhook_update(webhook=webhook, **changes),
            "Legacy webhook saved.")
    return redirect(reverse("dashboard:webhooks") + "#legacy")


@require_POST
@dashboard_view(manage=True)
def legacy_webhook_delete(request: HttpRequest, webhook_id: str) -> HttpResponse:
    webhook = _legacy_webhook(request, webhook_id)
    attempt(request, lambda: webhook_services.legacy_webhook_delete(webhook=webhook),
            f"Legacy webhook to {webhook.url} deleted.")
    return redirect(reverse("dashboard:webhooks") + "#legacy")


@dashboard_view(manage=True)
def delivery_detail(request: HttpRequest, delivery_id: str) -> HttpResponse:
    delivery = _delivery(request, delivery_id)
    return render(request, "dashboard/webhook_delivery.html", {
        "section": "webhooks", "delivery": delivery, "attempts": list(delivery.attempts.all()),
        "retriable": delivery.surface == Surface.V1
        and delivery.status in (DeliveryStatus.FAILED, DeliveryStatus.DELIVERED)})


@require_POST
@dashboard_view(manage=True)
def delivery_retry(request: HttpRequest, delivery_id: str) -> HttpResponse:
    delivery = _delivery(request, delivery_id)
    attempt(request, lambda: webhook_services.delivery_retry(delivery=delivery),
            "Retry queued: the new attempt appears among the delivery's attempts.")
    return redirect(safe_next(request, reverse("dashboard:webhook-delivery", args=[delivery.pk])))
