"""Helpers for the chat tests: sending turns and reading the event log."""

from __future__ import annotations

from core.models import Event


def chat(api, kit, message, *, session=None, visitor="visitor-1", scope="write", mode="live",
         **extra):
    body = {"message": message, "visitorId": visitor, **extra}
    if session:
        body["sessionId"] = session
    return api.post("/api/v1/chat", json=body, headers=kit.auth(scope, mode))


def take(api, kit, action, *, session, visitor="visitor-1", mode="live", **extra):
    """Takes a ``reply`` action as a client should: its ``message`` as the message, its
    ``metadata`` (a slot's ``{slot: token}``) as the request's metadata."""
    metadata = {**extra.pop("metadata", {}), **action.get("metadata", {})}
    return chat(api, kit, action["message"], session=session, visitor=visitor, mode=mode,
                metadata=metadata, **extra)


def events(kit, *types, livemode=True):
    qs = Event.objects.filter(tenant=kit.tenant, livemode=livemode).order_by("occurred_at", "id")
    if types:
        qs = qs.filter(type__in=types)
    return list(qs)


def event_types(kit, livemode=True):
    return [e.type for e in events(kit, livemode=livemode)]
