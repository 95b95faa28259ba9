from django.core.management.base import BaseCommand, CommandError

from apikeys.presenters import key_summary
from apikeys.services import api_key_revoke, api_key_revoke_old
from core.cli import as_json
from core.errors import ServiceError

from ._keyref import get_key


class Command(BaseCommand):
    help = ("Revokes a key at once. With --old-only, revokes instead the keys that KEY_ID replaced "
            "and that are still in their 24-hour grace period (\"Revoke Old Key\").")

    def add_arguments(self, parser):
        parser.add_argument("key_id")
        parser.add_argument("--old-only", action="store_true")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, key_id, old_only: bool, json: bool, **options):
        key = get_key(key_id)
        try:
            revoked = api_key_revoke_old(key=key) if old_only else [api_key_revoke(key=key)]
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        if json:
            self.stdout.write(as_json({"revoked": [key_summary(k) for k in revoked]}))
        else:
            for k in revoked:
                self.stdout.write(f"Revoked {k.pk} ({k.masked}).")
