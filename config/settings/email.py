"""Email (docs/meetings.md, "Email"): where the service's emails go.

``EMAIL_URL`` names the transport in one variable; without it, the usual Django variables
(``EMAIL_HOST``, ``EMAIL_PORT``, ``EMAIL_HOST_USER``, ``EMAIL_HOST_PASSWORD``, ``EMAIL_USE_TLS``,
``EMAIL_USE_SSL``) mean SMTP; with neither, emails are written to ``var/mail/`` as ``.eml`` files,
so that the embedded default needs no mail server and a newcomer can open what was sent.
``EMAIL_BACKEND`` (a dotted path, for example one of django-anymail's) replaces the transport.

A small parser of our own rather than dj-email-url (unreleased since 2022): it knows the four
transports we document and refuses anything else at start-up, naming the variable.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_int, env_str

EML_BACKEND = "core.mail.EmlFileBackend"
SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
_SCHEMES = ("smtp", "smtp+tls", "smtps", "file", "console", "off")


def parse_email_url(url: str, *, var_dir: Path) -> dict:
    """The Django settings ``url`` stands for (``EMAIL_BACKEND``, ``EMAIL_HOST``, ...)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ImproperlyConfigured(
            f"EMAIL_URL must start with one of {', '.join(s + '://' for s in _SCHEMES)}; "
            f"got {parts.scheme + '://' if parts.scheme else url!r}")
    if scheme == "off":
        return {"EMAIL_BACKEND": "django.core.mail.backends.dummy.EmailBackend",
                "EMAIL_ENABLED": False}
    if scheme == "console":
        return {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}
    if scheme == "file":
        return {"EMAIL_BACKEND": EML_BACKEND,
                "EMAIL_FILE_PATH": str(Path(unquote(parts.path)) if parts.path else var_dir / "mail")}
    return _smtp(parts, scheme)


def _smtp(parts, scheme: str) -> dict:
    if not parts.hostname:
        raise ImproperlyConfigured("EMAIL_URL names no host (smtp://user:password@host:port)")
    try:
        port = parts.port or {"smtp": 25, "smtp+tls": 587, "smtps": 465}[scheme]
    except ValueError:
        raise ImproperlyConfigured("EMAIL_URL has an invalid port") from None
    settings = {
        "EMAIL_BACKEND": SMTP_BACKEND,
        "EMAIL_HOST": parts.hostname,
        "EMAIL_PORT": port,
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_TLS": scheme == "smtp+tls",
        "EMAIL_USE_SSL": scheme == "smtps",
    }
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    if "from" in query:
        settings["DEFAULT_FROM_EMAIL"] = query["from"]
    if "timeout" in query:
        try:
            settings["EMAIL_TIMEOUT"] = int(query["timeout"])
        except ValueError:
            raise ImproperlyConfigured("EMAIL_URL's timeout must be an integer") from None
    return settings


def email_settings(var_dir: Path) -> dict:
    """Every email setting, from the environment."""
    found: dict = {
        "EMAIL_ENABLED": True,
        "EMAIL_TIMEOUT": env_int("EMAIL_TIMEOUT", 10, minimum=1),
        "DEFAULT_FROM_EMAIL": env_str("DEFAULT_FROM_EMAIL", "Sales agent <noreply@localhost>"),
        "EMAIL_FILE_PATH": str(var_dir / "mail"),
    }
    url = env_str("EMAIL_URL")
    if url:
        found.update(parse_email_url(url, var_dir=var_dir))
    elif env_str("EMAIL_HOST"):
        if env_bool("EMAIL_USE_TLS") and env_bool("EMAIL_USE_SSL"):
            raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be on")
        found.update({
            "EMAIL_BACKEND": SMTP_BACKEND,
            "EMAIL_HOST": env_str("EMAIL_HOST"),
            "EMAIL_PORT": env_int("EMAIL_PORT", 25, minimum=1),
            "EMAIL_HOST_USER": env_str("EMAIL_HOST_USER"),
            "EMAIL_HOST_PASSWORD": os.environ.get("EMAIL_HOST_PASSWORD", ""),
            "EMAIL_USE_TLS": env_bool("EMAIL_USE_TLS"),
            "EMAIL_USE_SSL": env_bool("EMAIL_USE_SSL"),
        })
    else:
        found["EMAIL_BACKEND"] = EML_BACKEND
    if backend := env_str("EMAIL_BACKEND"):
        found["EMAIL_BACKEND"] = backend
    return found
