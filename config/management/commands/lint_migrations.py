"""``manage.py lint_migrations``: refuses a migration that is not safe to run while the previous
release still serves (docs/deploy.md, "Migrations while the old code serves"; ``make lint``).

A deploy migrates first and rolls the web processes and workers after, so for a while the old
code runs on the new schema. django-migration-linter (docs/decisions.md, "The migration check")
reads the SQL each migration runs on PostgreSQL and refuses:

- what the old code cannot live with: a column or table dropped or renamed, a column made
  NOT NULL without a default, a column's type changed, a UNIQUE constraint added;
- what takes a lock long enough to stop the service: an index built, dropped or rebuilt on an
  existing table without ``CONCURRENTLY`` (reads go on during ``CREATE INDEX``; writes wait).

The migrations written before the check are grandfathered by name (``GRANDFATHERED``): they
ran long ago wherever the service runs. A new migration that must do one of these things says
why in an ``IgnoreMigration`` operation of the linter (docs/deploy.md) and is reviewed as such.
"""

from __future__ import annotations

import logging

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections

# Warnings of the linter that are refusals here: each builds or drops an index while holding a
# lock that stops writes to the table (a large table's leads, messages, events: minutes).
LOCKING_CHECKS = ("CREATE_INDEX", "CREATE_INDEX_EXCLUSIVE", "DROP_INDEX", "REINDEX")

# The project's apps (Django's own and third-party migrations are not ours to change).
APPS = ("core", "tenants", "apikeys", "leads", "agent", "conversations", "knowledge",
        "analytics", "webhooks", "widget", "dashboard", "calendars", "privacy")

# Migrations that were written before this check and fail it: they ran long ago (each the way
# its own notes say, some in a maintenance window: docs/deploy.md for leads' 0005).
GRANDFATHERED: frozenset[tuple[str, str]] = frozenset({
    # Written on branches beside the check and merged with it, before any release ran them: a
    # NOT NULL column with a Python-side default (and the rating's plain CREATE INDEX). Issue 31
    # follow-up: rewrite them with db_default and a concurrent index before they are released.
    ("conversations", "0015_proactive_messages"),
    ("conversations", "0016_conversation_rating"),
    ("widget", "0002_launcher_rating"),
    ("analytics", "0004_funnel_subsets"),
    ("apikeys", "0002_initial"),
    ("apikeys", "0005_idempotencykey_owner_and_written"),
    ("conversations", "0002_message_turn"),
    ("conversations", "0003_meetings_and_email"),
    ("conversations", "0005_retried_work_attempts"),
    ("conversations", "0007_message_conversation_index_covered_by_sequence"),
    ("conversations", "0008_conversation_handed_off_at"),
    ("conversations", "0011_meeting_lead_status_before"),
    ("conversations", "0014_message_recent"),
    ("core", "0002_event_facts"),
    ("leads", "0001_initial"),
    ("tenants", "0002_tenant_allowed_origins_tenant_booking_url_and_more"),
    ("tenants", "0003_agent_limits_and_facts"),
    ("tenants", "0004_meetings_and_email"),
    ("tenants", "0005_team_invitations_and_two_factor"),
    ("tenants", "0006_user_availability_and_presence"),
    ("tenants", "0007_tenant_agent_phrasings"),
    ("tenants", "0008_tenant_agent_embeddings"),
    ("tenants", "0011_tenant_consent"),
    ("tenants", "0013_user_email_on_mention"),
})


class Command(BaseCommand):
    help = "Refuses migrations that drop what the running code reads or lock tables for long."

    def add_arguments(self, parser):
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)
        parser.add_argument("--include-grandfathered", action="store_true",
                            help="Lint the grandfathered migrations too (to list them again).")
        parser.add_argument("--extra-app", action="append", default=[],
                            help="Lint this app too (the suite's sample of a bad migration).")

    def handle(self, *args, database: str, include_grandfathered: bool, extra_app: list[str],
               **options):
        try:
            from django_migration_linter import MigrationLinter
        except ImportError:
            raise CommandError("lint_migrations needs django-migration-linter, a development "
                               "dependency: pip install -e '.[dev]'") from None
        if connections[database].vendor != "postgresql":
            raise CommandError("lint_migrations reads the SQL that PostgreSQL would run: point "
                               "DATABASE_URL at a PostgreSQL database (make lint uses "
                               "LINT_DATABASE_URL).")
        grandfathered = frozenset() if include_grandfathered else GRANDFATHERED

        class Linter(MigrationLinter):
            def should_ignore_migration(self, app_label, migration_name, *args, **kwargs):
                return ((app_label, migration_name) in grandfathered
                        or super().should_ignore_migration(app_label, migration_name, *args,
                                                           **kwargs))

        linter = Linter(
            database=database,
            include_apps=[*APPS, *extra_app],
            no_cache=True,
            warnings_as_errors_tests=list(LOCKING_CHECKS),
            # Data migrations are reviewed, not linted: the linter's notes on RunPython and
            # RunSQL (reverse code, how models are reached) say nothing of locks or columns.
            exclude_migration_tests=["RUNPYTHON_REVERSIBLE", "RUNSQL_REVERSIBLE",
                                     "RUNPYTHON_MODEL_IMPORT", "RUNPYTHON_MODEL_VARIABLE_NAME"],
            quiet=["ok", "ignore"],
        )
        logging.getLogger("django_migration_linter").setLevel(logging.WARNING)  # a line each
        linter.lint_all_migrations()
        if linter.has_errors:
            raise CommandError("A migration above is not safe while the previous release "
                               "serves: see docs/deploy.md, \"Migrations while the old code "
                               "serves\".")
