"""Email addresses as the service takes and keeps them (docs/leads.md, "Email addresses").

An address is taken when it is one the published schemas allow (``EMAIL_PATTERN``, in every
OpenAPI document that has an email field) and Django's validator takes. It is then kept in one
form: Unicode's NFKC, and the domain case-folded and encoded as IDNA (UTS #46 mapping, IDNA
2008; ``Bücher.example`` is ``xn--bcher-kva.example``). That form is ASCII and again one the
schemas allow, so every answer that shows it matches them; and two addresses that differ only
by what the normalisation folds (case or full-width letters in the domain, ``ſ`` or the Kelvin
sign there) are one address, which is what uniqueness compares.

Look-alikes in the local part (``ſam@…`` for ``sam@…``, a dotless ``ı``, the Kelvin sign) are
outside the schemas, which take an ASCII local part: they are refused as given, never folded
into someone else's address. (Python's ``re`` lets them through Django's case-insensitive
``[A-Z]``, which is how they used to make a second lead.)
"""

from __future__ import annotations

import re
import unicodedata

import idna
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

MAX_LENGTH = 254

# An address Django's ``validate_email`` takes, for the schemas and the check above: a dot-atom
# or quoted local part of printable ASCII; a host name whose last label is letters (or
# punycode), or localhost. Django also takes control characters in a quoted local part and a
# bracketed IP address as the domain: the service does not. Written with escapes, as ECMAScript
# and Python read them alike (a raw U+FFFF is no character YAML allows).
_LETTER = r"a-zA-Z\u00a1-\uffff"
_LABEL = f"[{_LETTER}0-9](?:[{_LETTER}0-9-]{{0,61}}[{_LETTER}0-9])?"
_ATOM = r"[-!#$%&'*+/=?^_`{}|~0-9A-Za-z]+"
EMAIL_PATTERN = (
    rf'^(?:{_ATOM}(?:\.{_ATOM})*'
    r'|"(?:[!#-\[\]-~]|\\[ -~])*")'
    rf"@(?:{_LABEL}(?:\.{_LABEL})*\.(?:[{_LETTER}][{_LETTER}-]{{0,61}}[{_LETTER}]"
    r"|xn--[a-zA-Z0-9]{1,59})|localhost)$"
)
_SCHEMA = re.compile(EMAIL_PATTERN)

INVALID_MESSAGE = "Enter a valid email address."


class EmailRefused(ValueError):
    """The address is not taken: ``code`` is a validation code (required, too_long,
    invalid_format); ``semantic`` when it has the schemas' shape but its normalised form is
    not an address (a domain IDNA refuses), which the v1 surface answers with 422."""

    def __init__(self, code: str, message: str, *, semantic: bool = False):
        super().__init__(message)
        self.code, self.message, self.semantic = code, message, semantic


def _allowed(address: str) -> bool:
    # ``fullmatch``: Python's ``$`` also matches before a final line feed.
    if _SCHEMA.fullmatch(address) is None:
        return False
    try:
        validate_email(address)
    except ValidationError:
        return False
    return True


def fold(address: str) -> str:
    """``address`` in its kept form (NFKC; the domain case-folded and IDNA-encoded); raises
    ``idna.IDNAError`` (a ``UnicodeError``) for a domain that IDNA refuses. Checks nothing else:
    ``normalise_email`` does."""
    local, _, domain = unicodedata.normalize("NFKC", address).rpartition("@")
    return f"{local}@{idna.encode(domain, uts46=True).decode('ascii')}"


def normalise_email(value: object) -> str:
    """The kept form of the address ``value``, or ``EmailRefused``.

    The address as given must be one the schemas allow (else ``invalid_format``, a shape
    error); its kept form must be one too (else a semantic ``invalid_format``), and both at
    most 254 characters."""
    address = value.strip() if isinstance(value, str) else ""
    if not address:
        raise EmailRefused("required", "An email address is required.")
    if len(address) > MAX_LENGTH:
        raise EmailRefused("too_long", f"At most {MAX_LENGTH} characters.")
    if not _allowed(address):
        raise EmailRefused("invalid_format", INVALID_MESSAGE)
    try:
        kept = fold(address)
    except UnicodeError:
        raise EmailRefused("invalid_format", "The domain is not a valid internationalised "
                                             "domain name.", semantic=True) from None
    if len(kept) > MAX_LENGTH:
        raise EmailRefused("too_long", f"At most {MAX_LENGTH} characters once the domain is "
                                       "encoded as IDNA.", semantic=True)
    if not _allowed(kept):
        raise EmailRefused("invalid_format", INVALID_MESSAGE, semantic=True)
    return kept


def refolded(address: str) -> str | None:
    """The kept form of an address stored before addresses were normalised (migration
    ``leads.0006``), or None when that form is not one the schemas allow. Unlike
    ``normalise_email`` it takes what the schemas refuse as given, so NFKC folds a look-alike
    local part as well: ``ſam@…`` is ``sam@…``."""
    try:
        kept = fold(address.strip())
    except UnicodeError:
        return None
    return kept if len(kept) <= MAX_LENGTH and _allowed(kept) else None


def normalised_or_none(value: object) -> str | None:
    """The kept form of ``value``, or None when it is not an address the service takes."""
    try:
        return normalise_email(value)
    except EmailRefused:
        return None
