"""SQL that produces API values directly, for list endpoints.

A page of 100 leads carries 400 timestamps; turning each into a ``datetime`` and back into text
in Python costs about a third of the request's CPU. The database formats them instead, exactly
as ``config.api.fields.format_timestamp`` does (UTC, milliseconds truncated, ``Z``).
"""

from __future__ import annotations

from django.db import NotSupportedError


def iso_timestamp_sql(vendor: str, sql: str) -> str:
    """SQL that formats the timestamp expression ``sql`` (free of parameters) as the API
    writes it, for statements written out by hand (``leads.selectors``)."""
    if vendor == "postgresql":
        # to_char's MS truncates, as Python's isoformat(timespec="milliseconds") does.
        return f"to_char(({sql}) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    if vendor == "sqlite":
        # Django stores "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC; strftime's %f would round.
        text = f"({sql})"
        return (f"(substr({text}, 1, 10) || 'T' || substr({text}, 12, 8) || '.' || "
                f"substr({text} || '.000000', 21, 3) || 'Z')")
    raise NotSupportedError(f"iso_timestamp_sql is not implemented for {vendor}")
