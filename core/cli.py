"""What the management commands of every app print."""

from __future__ import annotations

import json
from typing import Any


def as_json(value: Any) -> str:
    """One compact JSON line, the output format of the management commands' ``--json``."""
    return json.dumps(value, separators=(",", ":"))


def secret(given: str | None, *, from_stdin: bool, env: str, what: str) -> str:
    """A secret a command takes: ``--<what>``, ``--<what>-stdin`` (the first line of standard
    input, so that it stays out of the shell's history and the process list) or ``$<env>``."""
    import os
    import sys

    from django.core.management.base import CommandError

    if from_stdin:
        given = sys.stdin.readline().rstrip("\r\n")
    elif given is None:
        given = os.environ.get(env, "")
    if not given:
        raise CommandError(f"No {what}: give --{what}, --{what}-stdin or ${env}.")
    return given


def refused(exc) -> str:
    """A service's refusal (``core.errors.ServiceError``) as one line of a command's error."""
    return exc.message + "".join(f" {d.field}: {d.message}" for d in exc.details
                                 if d.message != exc.message)
