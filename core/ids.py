"""Public ids. One record, one identity: the legacy surface shows the UUID, the v1 surface
``<prefix>_<32 hex>`` of the same UUID."""

from __future__ import annotations

import re
import uuid

from core.errors import NotFound

PREFIXES = frozenset({"lead", "user", "conv", "msg", "sess", "evt", "wh", "doc", "mtg", "whd", "wha",
                      "key", "phr", "erasure", "att"})
_V1_ID = re.compile(r"^([a-z]+)_([0-9a-f]{32})$")


def encode(prefix: str, value: uuid.UUID | None) -> str | None:
    if value is None:
        return None
    return f"{prefix}_{value.hex}"


def decode(prefix: str, value: str) -> uuid.UUID | None:
    """The UUID behind a v1 id of the given kind; None for anything else (wrong kind, shape)."""
    match = _V1_ID.match(value or "")
    if not match or match.group(1) != prefix:
        return None
    return uuid.UUID(hex=match.group(2))


def decode_or_404(prefix: str, value: str) -> uuid.UUID:
    found = decode(prefix, value)
    if found is None:
        raise NotFound()
    return found


def parse_uuid(value: str) -> uuid.UUID | None:
    """A legacy id: a UUID string in its canonical or hex form."""
    try:
        return uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        return None


def parse_uuid_or_404(value: str) -> uuid.UUID:
    found = parse_uuid(value)
    if found is None:
        raise NotFound()
    return found
