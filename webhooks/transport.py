"""Where a webhook may go, and the one HTTP request that takes it there: the service's shared
SSRF-checked client (``core.outbound``) under the webhooks' policy.

``WEBHOOKS_ALLOW_HTTP`` and ``WEBHOOKS_ALLOW_PRIVATE_TARGETS`` lift the two rules for tests and
local development; both are off by default.
"""

from __future__ import annotations

from urllib.parse import SplitResult

from core import outbound
from core.outbound import MAX_URL_LENGTH, Outcome, TargetRefused, connections, is_public

__all__ = ["MAX_URL_LENGTH", "POLICY", "Outcome", "TargetRefused", "check_target", "connections",
           "is_public", "parse_url", "post"]

POLICY = outbound.Policy(prefix="WEBHOOKS", what="webhooks",
                         credentials="Credentials in the URL are not allowed; deliveries are signed.")


def parse_url(url: str) -> SplitResult:
    """The URL's parts, if its shape may receive webhooks (scheme, host, no credentials)."""
    return outbound.parse_url(url, policy=POLICY)


def check_target(url: str) -> None:
    """Raises TargetRefused unless ``url`` may receive webhooks now."""
    outbound.check_target(url, policy=POLICY)


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> Outcome:
    """POSTs a delivery to its receiver and says how it went; never raises for its faults."""
    return outbound.post(url, body, headers, timeout=timeout, policy=POLICY)
