"""Connects a tenant user's CalDAV calendar, verified at once (docs/calendars.md).

The password comes from --password, or, to keep it out of the shell's history, from
--password-stdin or the CALDAV_PASSWORD environment variable.
"""


from django.core.management.base import BaseCommand, CommandError

from calendars.services import calendar_connect
from core.cli import as_json, refused, secret
from core.errors import ServiceError
from tenants.models import User
from tenants.selectors import tenant_by_reference

PASSWORD_ENV = "CALDAV_PASSWORD"


class Command(BaseCommand):
    help = "Connects a sales rep's CalDAV calendar. The password is stored encrypted, never shown."

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="Tenant id (UUID) or public id.")
        parser.add_argument("email", help="The rep's email (a user of the tenant).")
        parser.add_argument("--url", required=True, help="CalDAV URL: the calendar's, or the account's.")
        parser.add_argument("--username", required=True)
        source = parser.add_mutually_exclusive_group()
        source.add_argument("--password", help=f"App password (or --password-stdin, or ${PASSWORD_ENV}).")
        source.add_argument("--password-stdin", action="store_true",
                            help="Read the password from the first line of standard input.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, tenant, email, url, username, password, password_stdin, json, **_):
        found = tenant_by_reference(tenant)
        if found is None:
            raise CommandError(f"No tenant with id or public id {tenant!r}.")
        user = User.objects.filter(tenant=found, email__iexact=email).first()
        if user is None:
            raise CommandError(f"No user {email!r} in {found.name}.")
        password = secret(password, from_stdin=password_stdin, env=PASSWORD_ENV, what="password")
        try:
            connection = calendar_connect(tenant=found, user=user, url=url, username=username,
                                          password=password)
        except ServiceError as exc:
            raise CommandError(refused(exc)) from exc
        summary = {"user": user.email, "calendar_url": connection.calendar_url,
                   "freebusy_query": connection.freebusy_query,
                   "verified_at": connection.verified_at.isoformat()}
        self.stdout.write(as_json(summary) if json else
                          f"Connected {user.email}'s calendar: {connection.calendar_url}")
