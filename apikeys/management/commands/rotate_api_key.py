from django.core.management.base import BaseCommand, CommandError

from apikeys.presenters import key_summary
from apikeys.services import api_key_rotate
from core.cli import as_json
from core.errors import ServiceError

from ._keyref import get_key


class Command(BaseCommand):
    help = ("Rotates a key: the new key works at once; the old one keeps working for 24 hours, "
            "then never again.")

    def add_arguments(self, parser):
        parser.add_argument("key_id")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, key_id, json: bool, **options):
        old = get_key(key_id)
        try:
            new, raw = api_key_rotate(key=old, created_by="rotate_api_key")
        except ServiceError as exc:
            raise CommandError(exc.message) from exc
        old.refresh_from_db()
        result = {"newKey": key_summary(new, secret=raw), "oldKey": key_summary(old)}
        if json:
            self.stdout.write(as_json(result))
        else:
            self.stdout.write(f"New key: {raw} (id {new.pk}; shown only now)")
            self.stdout.write(f"Old key {old.pk} works until {result['oldKey']['expiresAt']}.")
