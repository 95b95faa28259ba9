"""Finding a key by id for the key commands, with a clear error."""

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from apikeys.models import ApiKey


def get_key(key_id: str) -> ApiKey:
    try:
        key = ApiKey.objects.select_related("tenant").filter(pk=key_id).first()
    except ValidationError:
        key = None
    if key is None:
        raise CommandError(f"No API key with id {key_id!r}.")
    return key
