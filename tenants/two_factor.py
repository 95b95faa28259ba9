"""Two-factor sign-in for the staff (docs/dashboard.md, "Accounts"): one TOTP device per person
(django-otp's ``TOTPDevice``: RFC 6238, 30-second steps, six digits, one step of drift either
way, and its throttling: each wrong code doubles the wait before the next is checked).

Setting up makes an unconfirmed device whose key the person's app takes from a QR code (or
typed); a code from the app confirms it, and from then on sign-in asks for a code after the
password. A person sets up one device: starting again replaces an unconfirmed one.
"""

from __future__ import annotations

from django.db import transaction
from django_otp.plugins.otp_totp.models import TOTPDevice

from core import events
from core.errors import FieldError, InvalidRequest
from core.models import EventType

from .models import User
from .team import actor_facts, member_facts

DEVICE_NAME = "Authenticator app"


def totp_device(*, user: User, confirmed: bool = True) -> TOTPDevice | None:
    """The person's device (confirmed, or the one being set up)."""
    return TOTPDevice.objects.filter(user=user, confirmed=confirmed).order_by("id").first()


@transaction.atomic
def totp_setup_start(*, user: User) -> TOTPDevice:
    """A fresh unconfirmed device (a new key) for the person to scan; an earlier unconfirmed one
    is dropped. A person who has a confirmed device keeps it."""
    TOTPDevice.objects.filter(user=user, confirmed=False).delete()
    return TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=False)


def _code_error(message: str) -> InvalidRequest:
    return InvalidRequest(message, details=[FieldError("code", "invalid", message)])


def _clean(code: str) -> str:
    return "".join((code or "").split())


def totp_setup_confirm(*, user: User, code: str) -> TOTPDevice:
    """Confirms the device being set up with a code from the app; refuses a wrong one. Not
    one transaction: the device records each wrong code (its throttling), which a refusal must
    not roll back."""
    device = TOTPDevice.objects.filter(user=user, confirmed=False).order_by("id").first()
    if device is None:
        raise _code_error("Start the set-up first: press Set up two-factor sign-in.")
    if not device.verify_token(_clean(code)):
        raise _code_error("This code is not the one your app shows now. Check the time of your "
                          "phone, and type the newest code.")
    with transaction.atomic():
        TOTPDevice.objects.filter(user=user, confirmed=True).delete()
        device.confirmed = True
        device.save(update_fields=["confirmed"])
        _emit(user, on=True)
    return device


def _emit(user: User, *, on: bool) -> None:
    events.emit(EventType.TEAM_MEMBER_TWO_FACTOR, tenant_id=user.tenant_id, livemode=True,
                description=f"{user.display_name} turned two-factor sign-in "
                            + ("on" if on else "off"),
                facts={"actor": actor_facts(user), "member": member_facts(user), "on": on})


def totp_verify(*, user: User, code: str) -> TOTPDevice:
    """The person's confirmed device, when ``code`` is its current code (each code works once);
    refused otherwise (django-otp's throttling slows down guessing; as above, no transaction
    rolls back the count of wrong codes)."""
    device = totp_device(user=user)
    if device is None:
        raise _code_error("This account has no two-factor device.")
    allowed, _ = device.verify_is_allowed()
    if not allowed:
        raise _code_error("Too many wrong codes: wait a little, then type the newest code.")
    if not device.verify_token(_clean(code)):
        raise _code_error("This code is not right. Type the code your app shows now.")
    return device


@transaction.atomic
def totp_disable(*, user: User) -> int:
    """Removes the person's devices: sign-in asks for the password only (unless the tenant
    requires two-factor, which then sends them to set it up again)."""
    had = TOTPDevice.objects.filter(user=user, confirmed=True).exists()
    deleted, _ = TOTPDevice.objects.filter(user=user).delete()
    if had:
        _emit(user, on=False)
    return deleted
