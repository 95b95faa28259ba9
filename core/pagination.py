"""Pages of ordered lists, and the v1 ``pagination`` object: ``{page, limit, total, totalPages,
hasMore}``. Selectors return pages; each surface shows them in its envelope."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet


@dataclass(frozen=True)
class Page:
    items: list[Any]
    page: int
    limit: int
    total: int

    @property
    def meta(self) -> dict[str, Any]:
        total_pages = (self.total + self.limit - 1) // self.limit
        return {
            "page": self.page,
            "limit": self.limit,
            "total": self.total,
            "totalPages": total_pages,
            "hasMore": self.page < total_pages,
        }


def paginate(queryset: QuerySet, *, page: int, limit: int, total: int | None = None) -> Page:
    """One page of an ordered queryset. ``total`` may be given when it is known more cheaply."""
    if not queryset.ordered:
        raise ValueError("Refusing to paginate an unordered queryset: pages would not be stable.")
    offset = (page - 1) * limit
    items = list(queryset[offset : offset + limit])
    if total is None:
        # A short first page tells the total without a COUNT.
        total = len(items) if page == 1 and len(items) < limit else queryset.count()
    return Page(items=items, page=page, limit=limit, total=total)
