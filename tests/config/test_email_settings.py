"""EMAIL_URL and the Django EMAIL_* variables become the email settings; nonsense stops the start."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings.email import EML_BACKEND, SMTP_BACKEND, email_settings, parse_email_url

VAR = Path("/srv/var")


def test_nothing_set_writes_eml_files_under_var(monkeypatch):
    for name in ("EMAIL_URL", "EMAIL_HOST", "EMAIL_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    found = email_settings(VAR)
    assert found["EMAIL_BACKEND"] == EML_BACKEND and found["EMAIL_FILE_PATH"] == "/srv/var/mail"
    assert found["EMAIL_ENABLED"] is True


@pytest.mark.parametrize(("url", "expected"), [
    ("smtp://mail.example.com", {"EMAIL_HOST": "mail.example.com", "EMAIL_PORT": 25,
                                 "EMAIL_USE_TLS": False, "EMAIL_USE_SSL": False}),
    ("smtp+tls://apikey:s%40cret@smtp.example.com:2525?from=Sales%20%3Cs%40acme.com%3E",
     {"EMAIL_PORT": 2525, "EMAIL_USE_TLS": True, "EMAIL_HOST_USER": "apikey",
      "EMAIL_HOST_PASSWORD": "s@cret", "DEFAULT_FROM_EMAIL": "Sales <s@acme.com>"}),
    ("smtps://u:p@smtp.example.com?timeout=3", {"EMAIL_PORT": 465, "EMAIL_USE_SSL": True,
                                                 "EMAIL_TIMEOUT": 3}),
])
def test_smtp_urls(url, expected):
    found = parse_email_url(url, var_dir=VAR)
    assert found["EMAIL_BACKEND"] == SMTP_BACKEND
    assert expected.items() <= found.items()


def test_file_console_and_off():
    assert parse_email_url("file:///tmp/mails", var_dir=VAR) == {
        "EMAIL_BACKEND": EML_BACKEND, "EMAIL_FILE_PATH": "/tmp/mails"}
    assert parse_email_url("console://", var_dir=VAR)["EMAIL_BACKEND"].endswith("console.EmailBackend")
    assert parse_email_url("off://", var_dir=VAR)["EMAIL_ENABLED"] is False


def test_the_django_variables_mean_smtp(monkeypatch):
    monkeypatch.delenv("EMAIL_URL", raising=False)
    monkeypatch.setenv("EMAIL_HOST", "smtp.example.com")
    monkeypatch.setenv("EMAIL_PORT", "587")
    monkeypatch.setenv("EMAIL_USE_TLS", "true")
    found = email_settings(VAR)
    assert (found["EMAIL_BACKEND"], found["EMAIL_PORT"], found["EMAIL_USE_TLS"]) == (
        SMTP_BACKEND, 587, True)


@pytest.mark.parametrize("url", ["smtp+ssl://h", "http://h", "smtp://", "smtp://h:port",
                                 "smtps://h?timeout=soon"])
def test_nonsense_stops_the_start_naming_the_variable(url):
    with pytest.raises(ImproperlyConfigured, match="EMAIL_URL"):
        parse_email_url(url, var_dir=VAR)


def test_a_password_in_the_url_is_not_in_the_error(monkeypatch):
    with pytest.raises(ImproperlyConfigured) as caught:
        parse_email_url("smpt://user:hunter2@h", var_dir=VAR)
    assert "hunter2" not in str(caught.value)
