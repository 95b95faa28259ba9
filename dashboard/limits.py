"""Rate limits of the dashboard's sign-in (docs/dashboard.md, "Accounts"; docs/rate-limits.md):
the service's own counter (``config.ratelimit``), in the shared cache, so every web process
counts together.

Every attempt counts, right or wrong: the staff form, the admin token, the two-factor code and
the password-reset form, per client address, and the staff form and the code also per account
(the email they name, hashed: no address is written to the cache). Past a budget the page says
so with 429 and ``Retry-After`` and checks nothing, until the window ends."""

from __future__ import annotations

import math
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from config import ratelimit
from config.ratelimit import Decision, Limit
from core import crypto

WINDOW = 15 * 60  # seconds
PER_ADDRESS = 30  # attempts per client address per window
PER_ACCOUNT = 10  # attempts per account per window
RESETS_PER_ADDRESS = 10  # password-reset emails asked per client address per window


def _limits(request: HttpRequest, *, account: str | None, kind: str) -> list[Limit]:
    address = ratelimit.client_address(request)
    per_address = RESETS_PER_ADDRESS if kind == "reset" else PER_ADDRESS
    limits = [Limit("address", f"signin-{kind}:addr:{address}", per_address, WINDOW,
                    f"{per_address} attempts per {WINDOW // 60} minutes from one address")]
    if account:
        limits.append(Limit("account", f"signin:acct:{crypto.digest(account)[:32]}", PER_ACCOUNT,
                            WINDOW, f"{PER_ACCOUNT} attempts per {WINDOW // 60} minutes for "
                                    "one account"))
    return limits


def sign_in_refused(request: HttpRequest, *, account: str | None, kind: str = "signin"
                    ) -> Decision | None:
    """Counts this attempt; the refusal when a budget is spent (None: go ahead)."""
    decision = ratelimit.check(_limits(request, account=account, kind=kind))
    return decision if decision is not None and not decision.allowed else None


def refused_page(request: HttpRequest, template: str, decision: Decision,
                 context: dict[str, Any]) -> HttpResponse:
    """``template`` with the refusal (``rate_limited``: what to tell the person), as 429."""
    retry = decision.retry_after
    minutes = max(1, math.ceil(retry / 60))
    whose = ("this account" if decision.report and decision.report.policy == "account"
             else "your address")
    message = (f"Too many sign-in attempts for {whose}. Wait {minutes} minute"
               f"{'s' if minutes != 1 else ''} and try again." if "reset" not in template else
               f"Too many reset emails asked from {whose}. Wait {minutes} minute"
               f"{'s' if minutes != 1 else ''} and try again.")
    response = render(request, template, {**context, "rate_limited": message}, status=429)
    response["Retry-After"] = str(retry)
    return response
