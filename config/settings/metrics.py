"""The Prometheus endpoint (docs/operations.md, "Metrics").

``METRICS_TOKEN`` turns it on: ``GET /metrics`` then answers a scraper that sends
``Authorization: Bearer <METRICS_TOKEN>``, and 404 to anyone else (and to everyone while it is
unset). The processes of a host (the web processes, the worker's, beat) write their series to
``METRICS_DIR`` (``var/metrics`` by default), prometheus-client's multiprocess directory, which
any web process sums when scraped. ``manage.py serve`` empties it as it starts; a deployment that
starts the processes itself empties it before starting them (docs/operations.md).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .env import env_str

_TOKEN = re.compile(r"^[A-Za-z0-9._~+/=-]{16,256}$")


def metrics_settings(var_dir: Path) -> dict:
    token = env_str("METRICS_TOKEN")
    if token and not _TOKEN.match(token):
        raise ImproperlyConfigured(
            "METRICS_TOKEN must be 16 to 256 characters of letters, digits and ._~+/=- "
            "(a bearer token; `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    directory = Path(env_str("METRICS_DIR") or var_dir / "metrics")
    if token:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ImproperlyConfigured(f"METRICS_DIR {str(directory)!r} cannot be created: "
                                       f"{exc}") from None
        if not os.access(directory, os.W_OK):
            raise ImproperlyConfigured(f"METRICS_DIR {str(directory)!r} is not writable")
        # Read by prometheus-client when its values module is first imported, which the
        # settings come before (core/metrics.py is imported with the apps).
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    return {"METRICS_TOKEN": token, "METRICS_DIR": directory}
