"""What the management commands of every app print."""

from __future__ import annotations

import json
from typing import Any


def as_json(value: Any) -> str:
    """One compact JSON line, the output format of the management commands' ``--json``."""
    return json.dumps(value, separators=(",", ":"))
