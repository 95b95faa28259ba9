"""Two-factor sign-in for the staff (docs/dashboard.md, "Accounts"): one TOTP device per person
(django-otp's ``TOTPDevice``: RFC 6238, 30-second steps, six digits, one step of drift either
way, and its throttling: each wrong code doubles the wait before the next is checked), and its
backup codes (django-otp's ``StaticDevice``, with the same throttling).

Setting up makes an unconfirmed device whose key the person's app takes from a QR code (or
typed); a code from the app confirms it, makes ``BACKUP_CODES`` backup codes (shown once), and
from then on sign-in asks for a code after the password, wherever the person signs in. A person
sets up one device: starting again replaces an unconfirmed one.

**Backup codes** are ten characters of base32 (50 bits), each usable once at the code prompt
in place of the app's code. The database keeps only a keyed hash of each (an HMAC with the
service's ``SECRET_KEY``, in django-otp's token column): someone who reads the table can neither
use them nor guess them offline. Making new ones (``backup_codes_regenerate``) deletes the old.
Changing ``SECRET_KEY`` voids them, as it voids sessions.

Turning two-factor off asks for the password and a current code (the app's or a backup code);
a manager can reset a member's second factor (``member_two_factor_reset``), which removes the
member's devices and is recorded with the manager's name.
"""

from __future__ import annotations

import base64
import secrets

from django.db import transaction
from django.utils.crypto import salted_hmac
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from core import events
from core.errors import FieldError, InvalidRequest, Unprocessable
from core.models import EventType

from .models import User
from .team import actor_facts, member_facts

DEVICE_NAME = "Authenticator app"
BACKUP_DEVICE_NAME = "Backup codes"
BACKUP_CODES = 10
BACKUP_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"  # base32, lower case
BACKUP_LENGTH = 10  # characters: 50 bits; shown as two groups of five
_BACKUP_SALT = "tenants.two_factor.backup-code"


def totp_device(*, user: User, confirmed: bool = True) -> TOTPDevice | None:
    """The person's device (confirmed, or the one being set up)."""
    return TOTPDevice.objects.filter(user=user, confirmed=confirmed).order_by("id").first()


def backup_codes_left(*, user: User) -> int:
    """How many of the person's backup codes are still unused."""
    return StaticToken.objects.filter(device__user=user, device__confirmed=True).count()


def is_backup_device(device: Device) -> bool:
    """Whether ``device`` is the person's backup codes (rather than their app)."""
    return isinstance(device, StaticDevice)


def session_device_valid(*, user: User, persistent_id: str | None) -> bool:
    """Whether ``persistent_id`` (what django-otp keeps in a session that a code signed in)
    names a confirmed device of ``user`` that still exists: the session passed the second
    factor. One query."""
    if not persistent_id or not isinstance(persistent_id, str):
        return False
    try:
        device = Device.from_persistent_id(persistent_id)
    except (ValueError, TypeError):
        return False
    return device is not None and device.user_id == user.pk and bool(device.confirmed)


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


def totp_setup_confirm(*, user: User, code: str) -> tuple[TOTPDevice, list[str]]:
    """Confirms the device being set up with a code from the app; refuses a wrong one. Returns
    the device and the person's new backup codes (to be shown this once). Not one transaction:
    the device records each wrong code (its throttling), which a refusal must not roll back."""
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
        codes = _new_backup_codes(user)
        _emit(user, on=True)
    return device, codes


def _backup_hash(user: User, code: str) -> str:
    """What the database keeps of a backup code: 80 bits of an HMAC keyed by the service's
    secret and bound to the person (django-otp's token column holds 16 characters)."""
    mac = salted_hmac(_BACKUP_SALT, f"{user.pk}:{code}", algorithm="sha256").digest()
    return base64.b32encode(mac).decode()[:16].lower()


def _new_backup_codes(user: User) -> list[str]:
    """Replaces the person's backup codes with ``BACKUP_CODES`` new ones; returns them as the
    person reads them (``abcde-fghij``)."""
    device, _ = StaticDevice.objects.get_or_create(user=user, name=BACKUP_DEVICE_NAME,
                                                   defaults={"confirmed": True})
    StaticDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
    device.token_set.all().delete()
    codes = ["".join(secrets.choice(BACKUP_ALPHABET) for _ in range(BACKUP_LENGTH))
             for _ in range(BACKUP_CODES)]
    StaticToken.objects.bulk_create([StaticToken(device=device, token=_backup_hash(user, c))
                                     for c in codes])
    if not device.confirmed:
        device.confirmed = True
        device.save(update_fields=["confirmed"])
    return [f"{c[:5]}-{c[5:]}" for c in codes]


def _password_error() -> InvalidRequest:
    message = "This is not your password."
    return InvalidRequest(message, details=[FieldError("password", "invalid", message)])


@transaction.atomic
def backup_codes_regenerate(*, user: User, password: str) -> list[str]:
    """New backup codes for a person with two-factor sign-in, after their password; the old
    codes stop working."""
    if not user.check_password(password or ""):
        raise _password_error()
    if totp_device(user=user) is None:
        raise Unprocessable("Turn two-factor sign-in on first: backup codes come with it.")
    return _new_backup_codes(user)


def _as_backup_code(code: str) -> str | None:
    """``code`` as a backup code (lower case, without spaces and dashes), or None when it has
    not the shape of one (an app's code has six digits)."""
    cleaned = _clean(code).replace("-", "").lower()
    if len(cleaned) == BACKUP_LENGTH and all(c in BACKUP_ALPHABET for c in cleaned):
        return cleaned
    return None


def _backup_verify(user: User, code: str) -> StaticDevice:
    # Under a row lock: two requests with one code cannot both use it. A wrong code's count
    # (the device's throttling) is committed with the block, not rolled back by the refusal.
    with transaction.atomic():
        device = (StaticDevice.objects.select_for_update()
                  .filter(user=user, confirmed=True).order_by("id").first())
        if device is None:
            ok, allowed = False, True
        else:
            allowed, _ = device.verify_is_allowed()
            ok = allowed and device.verify_token(_backup_hash(user, code))
    if not allowed:
        raise _code_error("Too many wrong codes: wait a little, then try again.")
    if not ok:
        raise _code_error("This backup code is not right, or was used already.")
    return device


def code_verify(*, user: User, code: str) -> Device:
    """The device that accepts ``code`` for a person with two-factor sign-in: their app's
    current code (each code works once) or one of their backup codes (used up by it). Refused
    otherwise; django-otp's throttling slows down guessing, and no transaction rolls back the
    count of wrong codes."""
    if totp_device(user=user) is None:
        raise _code_error("This account has no two-factor device.")
    backup = _as_backup_code(code)
    if backup is not None:
        return _backup_verify(user, backup)
    return totp_verify(user=user, code=code)


def totp_verify(*, user: User, code: str) -> TOTPDevice:
    """The person's confirmed device, when ``code`` is its current code (each code works once);
    refused otherwise."""
    device = totp_device(user=user)
    if device is None:
        raise _code_error("This account has no two-factor device.")
    allowed, _ = device.verify_is_allowed()
    if not allowed:
        raise _code_error("Too many wrong codes: wait a little, then type the newest code.")
    if not device.verify_token(_clean(code)):
        raise _code_error("This code is not right. Type the code your app shows now.")
    return device


def _emit(user: User, *, on: bool, actor: User | None = None, reset: bool = False) -> None:
    who = actor_facts(actor) if reset else actor_facts(user)
    if reset:
        description = f"{who['name']} reset the two-factor sign-in of {user.display_name}"
    else:
        description = f"{user.display_name} turned two-factor sign-in " + ("on" if on else "off")
    facts = {"actor": who, "member": member_facts(user), "on": on}
    if reset:
        facts["reset"] = True
    events.emit(EventType.TEAM_MEMBER_TWO_FACTOR, tenant_id=user.tenant_id, livemode=True,
                description=description, facts=facts)


def _remove_devices(user: User) -> bool:
    """Deletes every device of the person (the app's and the backup codes); whether two-factor
    sign-in was on."""
    had = TOTPDevice.objects.filter(user=user, confirmed=True).exists()
    TOTPDevice.objects.filter(user=user).delete()
    StaticDevice.objects.filter(user=user).delete()
    return had


def totp_disable(*, user: User, password: str, code: str) -> bool:
    """Turns the person's two-factor sign-in off, after their password and a current code (of
    the app, or a backup code): sign-in then asks for the password only (unless the tenant
    requires two-factor, which then sends them to set it up again). Whether it was on."""
    problems = []
    if not user.check_password(password or ""):
        problems.append(FieldError("password", "invalid", "This is not your password."))
    if totp_device(user=user) is None:
        return _remove_devices(user)
    if not problems:
        try:
            code_verify(user=user, code=code)
        except InvalidRequest as exc:
            problems += exc.details
    else:
        # A wrong password spends no code: the code is checked only with the right password.
        problems.append(FieldError("code", "unchecked", "Type your password, then a new code."))
    if problems:
        raise InvalidRequest("Two-factor sign-in is still on.", details=problems)
    with transaction.atomic():
        had = _remove_devices(user)
        if had:
            _emit(user, on=False)
    return had


@transaction.atomic
def member_two_factor_reset(*, user: User, actor: User | None) -> bool:
    """A manager (or the admin token) removes a member's second factor, for a member who lost
    their phone and their backup codes: the member signs in with the password again (and, where
    the team requires it, sets it up again). Not for one's own (that is My profile's Turn off,
    which asks for a code). Recorded as ``team.member_two_factor`` with the actor. Whether it
    was on."""
    if actor is not None and actor.pk == user.pk:
        raise Unprocessable("Turn your own two-factor sign-in off on My profile.",
                            details=[FieldError("user", "self", "Your own account.")])
    had = _remove_devices(user)
    if had:
        _emit(user, on=False, actor=actor, reset=True)
    return had
