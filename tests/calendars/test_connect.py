"""Connecting a rep's calendar: through the service and ``manage.py connect_calendar``, verified
at once against a real Radicale, with errors that name what failed."""

from __future__ import annotations

import io
import sys

import pytest
from django.core.management import CommandError, call_command

from calendars import services
from calendars.errors import CalendarAuthFailed, CalendarUrlFailed, NotACalendar
from calendars.models import CalendarConnection
from core import crypto
from tests.fakes.radicale import USERS, free_port


def test_connecting_finds_the_calendar_and_stores_the_password_encrypted(kit, rep, radicale,
                                                                          caplog):
    calendar_url = radicale.make_calendar()
    caplog.set_level("INFO", logger="calendars")
    connection = services.calendar_connect(tenant=kit.tenant, user=rep, url=radicale.url,
                                           username="ray", password=USERS["ray"])
    assert connection.calendar_url == calendar_url
    assert connection.freebusy_query is True  # Radicale answers free-busy REPORTs
    assert connection.verified_at is not None and connection.last_error == ""
    stored = CalendarConnection.objects.get()
    assert USERS["ray"] not in stored.password_encrypted
    assert crypto.decrypt(stored.password_encrypted) == USERS["ray"]
    # The log names the rep by id: neither their address nor the calendar's URL (docs/privacy.md)
    assert f"Calendar of user {rep.pk} connected" in caplog.text
    assert rep.email not in caplog.text and calendar_url not in caplog.text


def test_the_calendars_own_url_is_kept(kit, rep, radicale):
    radicale.make_calendar(name="other")
    url = radicale.make_calendar(name="work")
    connection = services.calendar_connect(tenant=kit.tenant, user=rep, url=url, username="ray",
                                           password=USERS["ray"])
    assert connection.calendar_url == url


def test_a_wrong_password_is_an_authentication_error_and_changes_nothing(kit, rep, radicale):
    radicale.make_calendar()
    with pytest.raises(CalendarAuthFailed) as caught:
        services.calendar_connect(tenant=kit.tenant, user=rep, url=radicale.url, username="ray",
                                  password="wrong")
    assert caught.value.extra["part"] == "authentication"
    assert "Authentication failed" in caught.value.message
    assert not CalendarConnection.objects.exists()


def test_a_url_with_nothing_there_is_a_url_error(kit, rep, radicale):
    with pytest.raises(CalendarUrlFailed, match="reach"):
        services.calendar_connect(tenant=kit.tenant, user=rep, url=f"http://127.0.0.1:{free_port()}/",
                                  username="ray", password=USERS["ray"])
    with pytest.raises(CalendarUrlFailed, match="404"):
        services.calendar_connect(tenant=kit.tenant, user=rep, url=radicale.url + "ray/nothing/",
                                  username="ray", password=USERS["ray"])
    assert not CalendarConnection.objects.exists()


def test_an_account_without_a_calendar_is_not_a_calendar(kit, rep, radicale):
    with pytest.raises(NotACalendar) as caught:
        services.calendar_connect(tenant=kit.tenant, user=rep, url=radicale.url, username="nocal",
                                  password=USERS["nocal"])
    assert caught.value.extra["part"] == "calendar"
    assert "no calendar" in caught.value.message
    assert not CalendarConnection.objects.exists()


def test_internal_addresses_and_plain_http_are_refused_by_default(kit, rep, settings):
    settings.CALENDARS_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(CalendarUrlFailed, match="an address that is not public") as caught:
        services.calendar_connect(tenant=kit.tenant, user=rep, url="https://localhost/dav/",
                                  username="ray", password="x")
    # The host, never what it resolves to: that would map the service's own network.
    assert "127.0.0.1" not in caught.value.message and "::1" not in caught.value.message
    settings.CALENDARS_ALLOW_HTTP = False
    with pytest.raises(CalendarUrlFailed, match="https"):
        services.calendar_connect(tenant=kit.tenant, user=rep, url="http://calendar.example.com/",
                                  username="ray", password="x")
    with pytest.raises(CalendarUrlFailed, match="own fields"):
        services.calendar_connect(tenant=kit.tenant, user=rep, url="https://a:b@calendar.example.com/",
                                  username="ray", password="x")
    assert not CalendarConnection.objects.exists()


def test_another_tenants_user_cannot_be_connected(kit, stranger, rep, radicale):
    from core.errors import NotFound

    with pytest.raises(NotFound):
        services.calendar_connect(tenant=stranger.tenant, user=rep, url=radicale.url,
                                  username="ray", password=USERS["ray"])


def test_the_command_connects_with_the_password_from_stdin_or_the_environment(
        kit, rep, radicale, monkeypatch):
    url = radicale.make_calendar()
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(USERS["ray"] + "\n"))
    call_command("connect_calendar", str(kit.tenant.pk), "RAY@acme.test", "--url", radicale.url,
                 "--username", "ray", "--password-stdin", stdout=out)
    assert f"Connected ray@acme.test's calendar: {url}" in out.getvalue()
    assert USERS["ray"] not in out.getvalue()

    CalendarConnection.objects.all().delete()
    monkeypatch.setenv("CALDAV_PASSWORD", USERS["ray"])
    out = io.StringIO()
    call_command("connect_calendar", str(kit.tenant.pk), "ray@acme.test", "--url", url,
                 "--username", "ray", "--json", stdout=out)
    assert f'"calendar_url":"{url}"' in out.getvalue()
    assert CalendarConnection.objects.get().user == rep


def test_the_command_says_what_failed(kit, rep, radicale, monkeypatch):
    radicale.make_calendar()
    monkeypatch.delenv("CALDAV_PASSWORD", raising=False)
    with pytest.raises(CommandError, match="Authentication failed"):
        call_command("connect_calendar", str(kit.tenant.pk), "ray@acme.test", "--url",
                     radicale.url, "--username", "ray", "--password", "wrong")
    with pytest.raises(CommandError, match="No password"):
        call_command("connect_calendar", str(kit.tenant.pk), "ray@acme.test", "--url",
                     radicale.url, "--username", "ray")
    with pytest.raises(CommandError, match="No user"):
        call_command("connect_calendar", str(kit.tenant.pk), "nobody@acme.test", "--url",
                     radicale.url, "--username", "ray", "--password", "x")
    assert not CalendarConnection.objects.exists()
