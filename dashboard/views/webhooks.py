"""Webhooks: v1 subscriptions (the secret shown once, after a redirect, like an API key's value),
the legacy webhook settings (the secret write-only), a signed test event to any receiver, the
delivery log with its attempts, the failed deliveries with a Retry button and Retry now for the
ones waiting for their next attempt. Every read is a ``webhooks.selectors`` query and every write
one ``webhooks.services`` call, through the actor: the page adds forms and messages, no webhook
logic of its own. A form the service refuses is shown again with its input and the reasons
beside its fields."""

from __future__ import annotations

import uuid

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import ServiceError
from core.models import EventType
from webhooks import selectors as webhook_selectors
from webhooks import services as webhook_services
from webhooks.envelopes import LEGACY_EVENT_TYPES, V1_EVENT_TYPES
from webhooks.models import DeliveryStatus, Surface

from ..auth import dashboard_view
from .common import (
    attempt,
    mark_invalid,
    page_of,
    query_without_page,
    refuse_on_form,
    safe_next,
    secret_page,
    secret_redirect,
)

LOG_PAGE_SIZE = 20
FAILED_SHOWN = 20
TEST_EVENT = EventType.WEBHOOK_TEST.value


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


def _subscription(request: HttpRequest, subscription_id: str):
    return request.actor.get(webhook_selectors.subscription_get, subscription_id=subscription_id)


def _legacy_webhook(request: HttpRequest, webhook_id: str):
    return request.actor.get(webhook_selectors.legacy_webhook_get, webhook_id=webhook_id)


def _delivery(request: HttpRequest, delivery_id: str):
    return request.actor.get(webhook_selectors.delivery_get, delivery_id=delivery_id)


def _legacy_prefix(webhook) -> str:
    return f"l{webhook.pk.hex[:8]}"


# --- the secret shown once (POST-redirect-GET, dashboard/views/common.py) -----------------------

_KINDS = ("subscription", "legacy")


def _stash_secret(request: HttpRequest, receiver, secret: str, kind: str) -> HttpResponse:
    return secret_redirect(request, kind=f"webhook-{kind}", object_id=receiver.pk, secret=secret,
                           to=reverse("dashboard:webhook-created", args=[kind, receiver.pk]))


@dashboard_view(manage=True)
def webhook_created(request: HttpRequest, kind: str, receiver_id: uuid.UUID) -> HttpResponse:
    if kind not in _KINDS:
        raise Http404
    receiver = (_legacy_webhook if kind == "legacy" else _subscription)(request, str(receiver_id))
    return secret_page(request, "dashboard/webhook_created.html",
                       {"receiver": receiver, "kind": kind, "section": "webhooks"},
                       kind=f"webhook-{kind}", object_id=receiver.pk)


# --- the page ---------------------------------------------------------------------------------

def _page(request: HttpRequest, *, subscription_form: SubscriptionForm | None = None,
          legacy_form: LegacyWebhookForm | None = None,
          bound: LegacyWebhookForm | None = None, status: int = 200) -> HttpResponse:
    """The webhooks page; a form refused by the validation or the service is shown again with
    its input and its errors beside the fields (``bound``: one legacy webhook's form)."""
    actor = request.actor
    status_filter = request.GET.get("status")
    if status_filter not in DeliveryStatus.values:
        status_filter = None
    log = page_of(request, actor.read(webhook_selectors.delivery_log_with_receivers,
                                      status=status_filter), LOG_PAGE_SIZE)
    failed = actor.read(webhook_selectors.failed_deliveries_with_receivers, limit=FAILED_SHOWN)
    legacy = []
    for webhook in actor.read(webhook_selectors.legacy_webhook_list):
        form = LegacyWebhookForm(initial={"url": webhook.url, "events": webhook.events,
                                          "active": webhook.active},
                                 prefix=_legacy_prefix(webhook))
        if bound is not None and bound.prefix == form.prefix:
            form = bound
        legacy.append({"webhook": webhook, "form": form})
    return render(request, "dashboard/webhooks.html", {
        "section": "webhooks",
        "subscriptions": list(actor.read(webhook_selectors.subscription_list)),
        "subscription_form": subscription_form or SubscriptionForm(), "legacy": legacy,
        "legacy_form": legacy_form or LegacyWebhookForm(prefix="new"), "failed": failed,
        "log": log, "status": status_filter, "statuses": DeliveryStatus.choices,
        "query": query_without_page(request),
    }, status=status)


def _refused(request: HttpRequest, **forms_shown: forms.Form) -> HttpResponse:
    """The page again, the refused form keeping its input, with the errors beside the fields
    (the secret is never sent back: the staff types it again)."""
    messages.error(request, "Nothing was saved: see the form below.")
    return _page(request, **{name: mark_invalid(f) for name, f in forms_shown.items()},
                 status=400)


@dashboard_view(manage=True)
def webhook_index(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _create(request: HttpRequest, form: forms.Form, service, success: str):
    """The service's new receiver and its secret, or the refusal on the form (None)."""
    data = form.cleaned_data
    try:
        created = request.actor.write(service, url=data["url"], events=data["events"],
                                      secret=data["secret"] or None)
    except ServiceError as exc:
        refuse_on_form(form, exc)
        return None
    messages.success(request, success)
    return created


@require_POST
@dashboard_view(manage=True)
def subscription_create(request: HttpRequest) -> HttpResponse:
    form = SubscriptionForm(request.POST)
    created = form.is_valid() and _create(request, form, webhook_services.subscription_create,
                                          "Subscription created.")
    if not created:
        return _refused(request, subscription_form=form)
    return _stash_secret(request, *created, kind="subscription")


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
    created = form.is_valid() and _create(request, form, webhook_services.legacy_webhook_create,
                                          "Legacy webhook saved.")
    if not created:
        return _refused(request, legacy_form=form)
    if form.cleaned_data["secret"]:
        # The staff chose the secret: nothing new to show.
        return redirect(reverse("dashboard:webhooks") + "#legacy")
    return _stash_secret(request, *created, kind="legacy")


@require_POST
@dashboard_view(manage=True)
def legacy_webhook_update(request: HttpRequest, webhook_id: str) -> HttpResponse:
    webhook = _legacy_webhook(request, webhook_id)
    form = LegacyWebhookForm(request.POST, prefix=_legacy_prefix(webhook))
    if not form.is_valid():
        return _refused(request, bound=form)
    data = form.cleaned_data
    # The secret is write-only: blank keeps the stored one.
    changes = {"url": data["url"], "events": data["events"], "active": data["active"]}
    if data["secret"]:
        changes["secret"] = data["secret"]
    try:
        webhook_services.legacy_webhook_update(webhook=webhook, **changes)
    except ServiceError as exc:
        refuse_on_form(form, exc)
        return _refused(request, bound=form)
    messages.success(request, "Legacy webhook saved.")
    return redirect(reverse("dashboard:webhooks") + "#legacy")


@require_POST
@dashboard_view(manage=True)
def legacy_webhook_delete(request: HttpRequest, webhook_id: str) -> HttpResponse:
    webhook = _legacy_webhook(request, webhook_id)
    attempt(request, lambda: webhook_services.legacy_webhook_delete(webhook=webhook),
            f"Legacy webhook to {webhook.url} deleted.")
    return redirect(reverse("dashboard:webhooks") + "#legacy")


@require_POST
@dashboard_view(manage=True)
def subscription_test(request: HttpRequest, subscription_id: str) -> HttpResponse:
    subscription = _subscription(request, subscription_id)
    return _send_test(request, lambda: webhook_services.subscription_send_test(
        subscription=subscription), subscription.url)


@require_POST
@dashboard_view(manage=True)
def legacy_webhook_test(request: HttpRequest, webhook_id: str) -> HttpResponse:
    webhook = _legacy_webhook(request, webhook_id)
    return _send_test(request, lambda: webhook_services.legacy_webhook_send_test(webhook=webhook),
                      webhook.url)


def _send_test(request: HttpRequest, send, url: str) -> HttpResponse:
    """Sends the test event; its delivery's page shows how the receiver answered."""
    delivery = attempt(request, send, f"Test event ({TEST_EVENT}) sent to {url}: its attempts "
                                      "below show how the receiver answered.")
    if delivery is None:
        return redirect("dashboard:webhooks")
    return redirect("dashboard:webhook-delivery", delivery_id=delivery.pk)


@dashboard_view(manage=True)
def delivery_detail(request: HttpRequest, delivery_id: str) -> HttpResponse:
    delivery = _delivery(request, delivery_id)
    return render(request, "dashboard/webhook_delivery.html", {
        "section": "webhooks", "delivery": delivery, "attempts": list(delivery.attempts.all()),
        "retry": _retry_label(delivery)})


def _retry_label(delivery) -> str:
    """The delivery page's button: Retry (failed, v1), Send again (delivered, v1), Retry now
    (waiting for its next attempt, either surface), or none."""
    if delivery.status == DeliveryStatus.WAITING_RETRY:
        return "Retry now"
    if delivery.surface != Surface.V1:
        return ""
    return {DeliveryStatus.FAILED: "Retry", DeliveryStatus.DELIVERED: "Send again"}.get(
        delivery.status, "")


@require_POST
@dashboard_view(manage=True)
def delivery_retry(request: HttpRequest, delivery_id: str) -> HttpResponse:
    delivery = _delivery(request, delivery_id)
    attempt(request, lambda: webhook_services.delivery_retry(delivery=delivery),
            "Retry queued: the new attempt appears among the delivery's attempts.")
    return redirect(safe_next(request, reverse("dashboard:webhook-delivery", args=[delivery.pk])))
