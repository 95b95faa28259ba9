"""The client address that per-address limits count against."""

from __future__ import annotations

import ipaddress

from django.conf import settings

# An IPv6 client usually owns a whole /64: counting single addresses would let it rotate through
# 2**64 budgets.
IPV6_PREFIX = 64


def client_address(request) -> str:
    """REMOTE_ADDR; behind a trusted proxy (``TRUST_X_FORWARDED_FOR``), the last entry of
    X-Forwarded-For, which is the one that proxy appended (entries further left come from the
    client and can be forged). IPv6 addresses are reduced to their /64 network."""
    meta = request.META
    address = meta.get("REMOTE_ADDR") or ""
    if settings.TRUST_X_FORWARDED_FOR:
        entries = [e.strip() for e in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if e.strip()]
        if entries:
            address = entries[-1]
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        # A unix socket or a proxy that sent garbage: one shared budget rather than none.
        return "unknown"
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False))
    return str(ip)
