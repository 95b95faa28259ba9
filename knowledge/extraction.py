"""Running the parser (``knowledge.parsing``) in a child process with a time and memory limit.

A PDF or DOCX comes from outside; pypdf and python-docx have limits of their own (pypdf refuses
a stream that inflates beyond 75 MB), but a file can still be built to take minutes, to nest
objects until the interpreter's stack gives out, or to allocate until the machine swaps. In a
child process the worst such a file can do is get that child killed: after
``KNOWLEDGE_PARSE_TIMEOUT_SECONDS`` of wall time, at ``KNOWLEDGE_PARSE_MEMORY_MB`` of address
space, or at its CPU-time limit. The Celery worker only waits, and records the reason.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys

from django.conf import settings

from .parsing import Parsed, ParseFailure, Section

logger = logging.getLogger("salesagent.knowledge")


def extract(*, data: bytes, type: str) -> Parsed:
    """The document's sections, or ParseFailure with a reason for the tenant."""
    timeout = settings.KNOWLEDGE_PARSE_TIMEOUT_SECONDS
    options = {
        "type": type,
        "max_pages": settings.KNOWLEDGE_MAX_PAGES,
        "max_characters": settings.KNOWLEDGE_MAX_CHARACTERS,
        "memory_bytes": settings.KNOWLEDGE_PARSE_MEMORY_MB * 1024 * 1024,
        "cpu_seconds": timeout + 1,
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "knowledge.parsing", json.dumps(options)],
            input=data, capture_output=True, timeout=timeout, cwd=settings.BASE_DIR, check=False,
        )
    except subprocess.TimeoutExpired:
        raise ParseFailure(f"Reading the document took longer than the limit of {timeout} "
                           "seconds.") from None
    if proc.returncode != 0:
        logger.warning("document parser exited with %s: %s", proc.returncode,
                       proc.stderr[-500:].decode(errors="replace"))
        if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            raise ParseFailure(f"Reading the document took longer than the limit of {timeout} "
                               "seconds.")
        if b"MemoryError" in proc.stderr:
            raise ParseFailure("The document needs too much memory to be read.")
        raise ParseFailure("The document could not be read (the parser stopped).")
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        raise ParseFailure("The document could not be read (the parser gave no result).") from None
    if not result.get("ok"):
        raise ParseFailure(str(result.get("reason") or "The document could not be read."))
    return Parsed(sections=[Section(s["heading"], list(s["paragraphs"])) for s in result["sections"]],
                  pages=result.get("pages"))
