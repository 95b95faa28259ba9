"""Rate limits of the sign-in (docs/dashboard.md, "Accounts"; docs/security.md, "Accounts"):
the service's own counter (``config.ratelimit``), in the shared cache, so every web process
counts together.

**Per client address**, every attempt counts, right or wrong: the staff form (the dashboard's
and the admin's), the admin token, the two-factor code and the password-reset form. Past the
budget the page says so with 429 and ``Retry-After`` and checks nothing, until the window ends.

**Per account**, only failures count, and they never shut the account's owner out. An account
with fewer than ``PER_ACCOUNT`` failures in the window is only under the address limit. Once it
has that many (someone is guessing), each client address may fail at it ``PER_PAIR_UNDER_ATTACK``
times more in the window, and is then refused for that account until the window ends; an
address that has not failed at the account is still checked, so its owner, elsewhere, signs in
with the right password and code. Guessing stays bounded by the addresses an attacker holds
(a few guesses per address and window, and ``PER_ADDRESS`` attempts per address in all).

An admitted attempt counts against its account-and-address pair at once (so that concurrent
guesses from one address cannot all pass), and the right password (or code) takes that count
back; a wrong one adds a failure to the account (``SignInAttempt.failed``). The account is
named by a hash of the email typed (no email is written to the cache), whether or not it
exists."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from config import ratelimit
from config.ratelimit import Decision, Limit
from core import crypto

WINDOW = 15 * 60  # seconds
PER_ADDRESS = 30  # attempts per client address per window
PER_ACCOUNT = 10  # failures at one account per window before it counts as under attack
PER_PAIR_UNDER_ATTACK = 3  # failures per address at an account under attack, per window
RESETS_PER_ADDRESS = 10  # password-reset emails asked per client address per window


def _address_limit(request: HttpRequest, kind: str) -> Limit:
    address = ratelimit.client_address(request)
    per_address = RESETS_PER_ADDRESS if kind == "reset" else PER_ADDRESS
    return Limit("address", f"signin-{kind}:addr:{address}", per_address, WINDOW,
                 f"{per_address} attempts per {WINDOW // 60} minutes from one address")


def sign_in_refused(request: HttpRequest, *, kind: str = "signin") -> Decision | None:
    """Counts one attempt that names no account (the admin token, a reset request) against
    its address; the refusal when the budget is spent (None: go ahead)."""
    decision = ratelimit.check([_address_limit(request, kind)])
    return decision if decision is not None and not decision.allowed else None


@dataclass
class SignInAttempt:
    """One attempt at an account: ``refusal`` when it may not be checked, else the outcome
    settles what it counted (``succeeded`` or ``failed``, once)."""

    refusal: Decision | None
    account: Limit
    pair: Limit
    at: float

    def succeeded(self) -> None:
        """The password (or code) was right: this attempt no longer counts for its address."""
        ratelimit.add(self.pair, -1, at=self.at)

    def failed(self) -> None:
        """It was wrong: one more failure at the account (its address's count stays)."""
        ratelimit.add(self.account, 1, at=self.at)


def sign_in_attempt(request: HttpRequest, *, account: str) -> SignInAttempt:
    """Admits (counting it against its address and its account-and-address pair) or refuses
    one attempt at ``account`` (the email, or the user name, typed)."""
    name = crypto.digest(account.strip().lower())[:32]
    address = ratelimit.client_address(request)
    failures = Limit("account", f"signin:acct-failures:{name}", PER_ACCOUNT, WINDOW,
                     f"{PER_ACCOUNT} failed sign-ins per {WINDOW // 60} minutes at one account")
    counted = ratelimit.peek([failures])
    under_attack = counted is not None and counted[0] >= PER_ACCOUNT
    cap = PER_PAIR_UNDER_ATTACK if under_attack else PER_ACCOUNT
    pair = Limit("account", f"signin:pair:{crypto.digest(f'{name}|{address}')[:32]}", cap,
                 WINDOW, f"{cap} failed sign-ins per {WINDOW // 60} minutes at one account "
                         "from one address")
    decision = ratelimit.check([_address_limit(request, "signin"), pair])
    refusal = decision if decision is not None and not decision.allowed else None
    at = decision.at if decision is not None else ratelimit.core.now()
    return SignInAttempt(refusal=refusal, account=failures, pair=pair, at=at)


def refusal_message(decision: Decision, *, reset: bool = False) -> str:
    """What to tell the person refused by ``decision``, and how long to wait."""
    minutes = max(1, math.ceil(decision.retry_after / 60))
    wait = f"Wait {minutes} minute{'s' if minutes != 1 else ''} and try again."
    if reset:
        return f"Too many reset emails asked from your address. {wait}"
    if decision.report and decision.report.policy == "account":
        return f"Too many failed sign-ins for this account from your address. {wait}"
    return f"Too many sign-in attempts for your address. {wait}"


def refused_page(request: HttpRequest, template: str, decision: Decision,
                 context: dict[str, Any]) -> HttpResponse:
    """``template`` with the refusal (``rate_limited``: what to tell the person), as 429."""
    message = refusal_message(decision, reset="reset" in template)
    response = render(request, template, {**context, "rate_limited": message}, status=429)
    response["Retry-After"] = str(decision.retry_after)
    return response
