"""Backs up the embedded default into one archive (docs/deploy.md, "Backup and restore").

Into a ``.tar.gz``: the database and the broker's SQLite files, each copied with SQLite's online
backup API (``sqlite3.Connection.backup``: a consistent copy while the web server and the worker
go on writing, which copying the file, its WAL beside it, is not), the key that encrypts the
stored secrets (``var/secret_key``, when the key is the embedded default's), the mail the file
backend wrote (``var/mail``), the demo tenant's keys, and a manifest. ``manage.py restore`` lays
it out in a new ``VAR_DIR``.

On PostgreSQL the command refuses and names the tool to use: ``pg_dump -Fc``.
"""

from __future__ import annotations

import datetime
import io
import json
import sqlite3
import tarfile
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

FORMAT = 1
# What of VAR_DIR an archive holds besides the two databases, and where.
FILES = ("secret_key", "demo-tenant.json")
DIRECTORIES = ("mail",)


def sqlite_copy(source: Path, target: Path) -> None:
    """A consistent copy of the SQLite database ``source`` (SQLite's online backup API)."""
    src = sqlite3.connect(source, timeout=30)
    dst = sqlite3.connect(target)
    try:
        with dst:
            src.backup(dst, pages=1024)
    finally:
        dst.close()
        src.close()


def broker_file() -> Path | None:
    url = settings.CELERY_BROKER_URL
    if not url.startswith("sqlite:///"):
        return None
    path = Path(url.removeprefix("sqlite:///"))
    return path if path.exists() else None


class Command(BaseCommand):
    help = "Backs up the embedded default (SQLite, its broker and var/ files) into one archive."

    def add_arguments(self, parser):
        parser.add_argument("--output", "-o", help="The archive to write (default: "
                            "var/backups/backup-<UTC time>.tar.gz).")

    def handle(self, *args, output: str | None, **options):
        if connection.vendor != "sqlite":
            raise CommandError("The database is PostgreSQL: back it up with pg_dump -Fc "
                               "(docs/deploy.md, \"Backup and restore\").")
        var = Path(settings.VAR_DIR)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        target = Path(output) if output else var / "backups" / f"backup-{stamp}.tar.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        database = Path(settings.DATABASES["default"]["NAME"])
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            copies = {"db.sqlite3": Path(scratch) / "db.sqlite3"}
            sqlite_copy(database, copies["db.sqlite3"])
            if (broker := broker_file()) is not None:
                copies["celery/broker.sqlite3"] = Path(scratch) / "broker.sqlite3"
                sqlite_copy(broker, copies["celery/broker.sqlite3"])
            manifest = {
                "format": FORMAT, "createdAt": stamp,
                "migrations": sorted(f"{app}.{name}" for app, name in
                                     MigrationRecorder(connection).applied_migrations()),
                "keyIncluded": (var / "secret_key").exists(),
            }
            partial = target.with_name(target.name + ".partial")
            with tarfile.open(partial, "w:gz") as archive:
                for name, path in copies.items():
                    archive.add(path, arcname=name)
                for name in FILES:
                    if (var / name).is_file():
                        archive.add(var / name, arcname=name)
                for name in DIRECTORIES:
                    if (var / name).is_dir():
                        archive.add(var / name, arcname=name)
                data = json.dumps(manifest, indent=2).encode()
                info = tarfile.TarInfo("manifest.json")
                info.size, info.mode = len(data), 0o600
                archive.addfile(info, io.BytesIO(data))
            partial.chmod(0o600)  # it holds the key and everyone's data
            partial.replace(target)
        self.stdout.write(str(target))
