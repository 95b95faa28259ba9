"""``manage.py lint_migrations`` (make lint): every migration of the project is safe to run while
the previous release serves, or grandfathered by name; a new one that drops a column the old code
reads, builds an index with a lock on writes, or adds a NOT NULL column whose default Django
drops is refused (docs/deploy.md, "Migrations while the old code serves").

The check reads the SQL PostgreSQL would run, so these run in the PostgreSQL suite (CI runs it);
on the embedded default the command refuses to run, which the last test checks."""

from __future__ import annotations

import re

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the check reads PostgreSQL's SQL; the PostgreSQL suite (CI) runs it")


def _lint(capsys, *args: str) -> tuple[bool, str]:
    try:
        call_command("lint_migrations", *args)
    except CommandError:
        refused = True
    else:
        refused = False
    return refused, capsys.readouterr().out


def _flagged(output: str, app: str) -> set[str]:
    return set(re.findall(rf"\({app}, (\w+)\)\.\.\. ERR", output))


@postgresql_only
@pytest.mark.django_db
def test_the_projects_migrations_pass_with_the_grandfathered_left_out(capsys):
    refused, output = _lint(capsys)
    assert not refused, output
    assert "ERR" not in output


@postgresql_only
@pytest.mark.django_db
def test_the_grandfathered_list_is_exactly_the_migrations_that_fail(capsys):
    from config.management.commands.lint_migrations import GRANDFATHERED

    refused, output = _lint(capsys, "--include-grandfathered")
    assert refused
    failing = set(re.findall(r"\((\w+), (\w+)\)\.\.\. ERR", output))
    assert failing == set(GRANDFATHERED)


@postgresql_only
@pytest.mark.django_db(transaction=True)  # the concurrent index's SQL is not made in a transaction
def test_a_dropped_column_a_locking_index_and_a_dropped_default_are_refused(capsys, settings):
    with override_settings(INSTALLED_APPS=[*settings.INSTALLED_APPS,
                                           "tests.migration_samples"]):
        refused, output = _lint(capsys, "--extra-app", "migration_samples")
    assert refused
    assert _flagged(output, "migration_samples") == {
        "0002_drop_legacy", "0003_index_name", "0004_required_flag"}
    assert "DROPPING columns" in output
    assert "CREATE INDEX locks table" in output
    assert "NOT NULL constraint on columns" in output


@pytest.mark.skipif(connection.vendor == "postgresql", reason="the embedded default's answer")
def test_on_the_embedded_default_it_says_it_needs_postgresql():
    with pytest.raises(CommandError, match="PostgreSQL"):
        call_command("lint_migrations")
