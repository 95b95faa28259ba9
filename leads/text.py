"""The searchable text of a lead's custom fields, shared by the writes that store it and the
search that explains its matches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _leaf_values(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaf_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaf_values(item)
    elif isinstance(value, bool):
        yield "true" if value else "false"
    elif value is not None:
        yield str(value)


def custom_fields_text(custom_fields: dict[str, Any]) -> str:
    """The leaf values of custom fields, one a line; keys are not searchable content."""
    return "\n".join(_leaf_values(custom_fields))
