"""Encryption of secrets the service must use but never show (tenants' language-model keys).

Fernet (AES-128-CBC + HMAC-SHA256) keyed by ``FIELD_ENCRYPTION_KEY``, or by a key derived from
``SECRET_KEY`` when that is unset. Changing the key makes stored secrets unreadable: they must be
entered again.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


@lru_cache(maxsize=4)
def _fernet(key_material: str) -> Fernet:
    digest = hashlib.sha256(("field-encryption:" + key_material).encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _current() -> Fernet:
    return _fernet(getattr(settings, "FIELD_ENCRYPTION_KEY", "") or settings.SECRET_KEY)


def encrypt(plaintext: str) -> str:
    return _current().encrypt(plaintext.encode()).decode() if plaintext else ""


def decrypt(token: str) -> str:
    """The plaintext, or "" when there is none or the key has changed since it was stored."""
    if not token:
        return ""
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken:
        return ""


def digest(secret: str) -> str:
    """SHA-256 hex of a high-entropy secret (API keys, admin tokens).

    A fast hash is right here: the secrets carry 190+ bits of entropy, so there is nothing for a
    slow password hasher to protect, and authentication runs on every request.
    """
    return hashlib.sha256(secret.encode()).hexdigest()
