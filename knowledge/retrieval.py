"""Retrieval: the knowledge passages that may answer a visitor's message.

This is the one interface the agent uses (``conversations.services`` calls ``retrieve`` on
every turn). The knowledge-base issue backs it with the document index (PostgreSQL full-text
search, SQLite FTS5); until a tenant has documents there is nothing to retrieve.
"""

from __future__ import annotations

from conversations.agent.types import Passage
from tenants.models import Tenant


def retrieve(*, tenant: Tenant, livemode: bool, query: str, limit: int = 3) -> list[Passage]:
    """The best passages of the tenant's ready documents in this mode, best first."""
    return []
