"""Files sent in a conversation (docs/conversations.md, "Attachments").

The bytes go through Django's storage API, under the ``attachments`` alias of ``STORAGES``:
by default a FileSystemStorage under ``var/attachments``; ``ATTACHMENTS_STORAGE`` names another
backend class (S3 through django-storages, say), with its options in its own settings.
"""

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .env import env_int, env_str

__all__ = ["ATTACHMENTS_MAX_BYTES", "ATTACHMENTS_MAX_PER_CONVERSATION", "ATTACHMENTS_STORAGE",
           "attachment_storages"]

# One file's size, checked as the upload is read (never loaded whole into memory first).
ATTACHMENTS_MAX_BYTES = env_int("ATTACHMENTS_MAX_BYTES", 10 * 1024 * 1024, minimum=1024)
# Files per conversation, both sides together.
ATTACHMENTS_MAX_PER_CONVERSATION = env_int("ATTACHMENTS_MAX_PER_CONVERSATION", 20, minimum=1)
ATTACHMENTS_STORAGE = env_str("ATTACHMENTS_STORAGE", "django.core.files.storage.FileSystemStorage")
if "." not in ATTACHMENTS_STORAGE:
    raise ImproperlyConfigured(
        f"ATTACHMENTS_STORAGE must be a dotted class path, not {ATTACHMENTS_STORAGE!r}.")


def attachment_storages(var_dir: Path) -> dict:
    """``STORAGES``: Django's two defaults and the attachments' own."""
    options = ({"location": str(Path(env_str("ATTACHMENTS_DIR") or var_dir / "attachments"))}
               if ATTACHMENTS_STORAGE == "django.core.files.storage.FileSystemStorage" else {})
    return {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        "attachments": {"BACKEND": ATTACHMENTS_STORAGE, "OPTIONS": options},
    }
