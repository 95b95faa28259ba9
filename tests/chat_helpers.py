"""Helpers for the chat tests: sending turns and reading the event log."""

from __future__ import annotations

from core.models import Event


def chat(api, kit, message, *, session=None, visitor="visitor-1", scope="write", mode="live",
         **extra):
    body = {"message": message, "visitorId": visitor, **extra}
    if session:
        body["sessionId"] = session
    return api.post("/api/v1/chat", json=body, headers=kit.auth(scope, mode))


def events(kit, *types, livemode=True):
    qs = Event.objects.filter(tenant=kit.tenant, livemode=livemode).order_by("occurred_at", "id")
    if types:
        qs = qs.filter(type__in=types)
    return list(qs)


def event_types(kit, livemode=True):
    return [e.type for e in events(kit, livemode=livemode)]
