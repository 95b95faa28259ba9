"""Lays out an archive of ``manage.py backup`` in a new directory, to be served with
``VAR_DIR=<that directory>`` (docs/deploy.md, "Backup and restore").

The directory must be new or empty: a restore never overwrites a running service's files. The
archive's members are checked before anything is written (no absolute path, no ``..``, no link,
only what ``backup`` puts in), and each database is checked with SQLite's integrity check.
"""

from __future__ import annotations

import json
import sqlite3
import tarfile
from pathlib import Path, PurePosixPath

from django.core.management.base import BaseCommand, CommandError

from .backup import DIRECTORIES, FILES, FORMAT

DATABASES = ("db.sqlite3", "celery/broker.sqlite3")


def _allowed(name: str) -> bool:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        return False
    return (name in (*DATABASES, *FILES, "manifest.json", "celery")
            or path.parts[0] in DIRECTORIES)


class Command(BaseCommand):
    help = "Restores an archive of manage.py backup into a new VAR_DIR."

    def add_arguments(self, parser):
        parser.add_argument("archive")
        parser.add_argument("--var-dir", required=True,
                            help="The new directory; serve it with VAR_DIR set to it.")

    def handle(self, *args, archive: str, var_dir: str, **options):
        target = Path(var_dir)
        if target.exists() and any(target.iterdir()):
            raise CommandError(f"{target} is not empty: restore into a new directory.")
        try:
            tar = tarfile.open(archive, "r:gz")  # noqa: SIM115 - closed by the with below
        except (OSError, tarfile.TarError) as exc:
            raise CommandError(f"{archive} is not a backup archive ({exc}).") from None
        with tar:
            members = tar.getmembers()
            names = {member.name for member in members}
            for member in members:
                if not (member.isfile() or member.isdir()) or not _allowed(member.name):
                    raise CommandError(f"{archive} holds {member.name!r}, which no backup holds.")
            if "manifest.json" not in names or "db.sqlite3" not in names:
                raise CommandError(f"{archive} is not a backup archive (no manifest or database).")
            manifest = json.load(tar.extractfile("manifest.json"))
            if manifest.get("format") != FORMAT:
                raise CommandError(f"{archive} has format {manifest.get('format')!r}; this "
                                   f"version reads {FORMAT}.")
            target.mkdir(parents=True, exist_ok=True)
            tar.extractall(target, filter="data")
        for name in DATABASES:
            path = target / name
            if path.exists():
                with sqlite3.connect(path) as db:
                    result = db.execute("PRAGMA integrity_check").fetchone()[0]
                if result != "ok":
                    raise CommandError(f"{name} in {archive} is damaged: {result}")
        if (target / "secret_key").exists():
            (target / "secret_key").chmod(0o600)
        self.stdout.write(f"Restored {archive} (made {manifest.get('createdAt')}) into {target}. "
                          f"Serve it with VAR_DIR={target}"
                          + ("" if manifest.get("keyIncluded") else
                             " and the SECRET_KEY / FIELD_ENCRYPTION_KEY of the backed-up service")
                          + ".")
