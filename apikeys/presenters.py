"""How an API key is shown to operators (management commands, dashboard): never its hash."""

from __future__ import annotations

from core.timestamps import format_timestamp

from .models import ApiKey


def key_summary(key: ApiKey, *, secret: str | None = None) -> dict:
    data = {
        "id": str(key.pk),
        "name": key.name,
        "scope": key.scope,
        "mode": "live" if key.livemode else "test",
        "prefix": key.masked,
        "status": key.status,
        "createdAt": format_timestamp(key.created_at),
        "expiresAt": format_timestamp(key.expires_at),
        "revokedAt": format_timestamp(key.revoked_at),
        "lastUsedAt": format_timestamp(key.last_used_at),
    }
    if secret is not None:
        data["key"] = secret
    return data
