"""Leads: the people the agent captures, scores and qualifies."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from .vocabulary import V1_OF_STORED, LeadSource, LeadStatus

# The v1 word for each stored status, computed by the database so that the v1 status filter is
# one equality on an indexed column (``status IN (...)`` cannot be read in index order).
_V1_STATUS_EXPRESSION = models.Case(
    *[models.When(status=stored, then=models.Value(shown))
      for stored, shown in V1_OF_STORED.items()],
    output_field=models.CharField(max_length=10),
)


class Lead(models.Model):
    """A person the agent or the staff captured, with one status and one score 0-100.

    Both surfaces show the same row: v1 as ``lead_<hex>`` with the v1 vocabulary, legacy as the
    UUID with the legacy vocabulary (``leads.vocabulary``). ``custom_fields`` is v1's
    ``customFields`` and legacy's ``metadata``: one record, one identity.

    Search also reads ``custom_fields_text``, the values of ``custom_fields`` flattened by the
    services (``leads.services``); on PostgreSQL, trigram indexes on name, email, company and
    that column (migration 0002, outside the model state because SQLite has no such index) make
    ``ILIKE '%term%'`` an index scan.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: every composite index below starts with the tenant.
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="leads",
                               db_index=False)
    livemode = models.BooleanField()

    email = models.CharField(max_length=254)
    name = models.CharField(max_length=200, blank=True)
    company = models.CharField(max_length=200, blank=True)
    title = models.CharField(max_length=200, blank=True)
    phone = models.CharField(max_length=50, blank=True)

    status = models.CharField(max_length=12, choices=LeadStatus.choices, default=LeadStatus.NEW)
    v1_status = models.GeneratedField(
        expression=_V1_STATUS_EXPRESSION,
        output_field=models.CharField(max_length=10),
        db_persist=True,
    )
    score = models.PositiveSmallIntegerField(default=0)
    source = models.CharField(max_length=10, choices=LeadSource.choices, default=LeadSource.API)

    tags = models.JSONField(default=list, blank=True)
    custom_fields = models.JSONField(default=dict, blank=True)
    custom_fields_text = models.TextField(blank=True, default="", editable=False)

    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="assigned_leads",
    )
    # The intent the agent last detected in this lead's conversations (filled by chat).
    last_intent = models.CharField(max_length=100, blank=True)

    first_seen_at = models.DateTimeField(default=timezone.now)
    last_active_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                "tenant", "livemode", Lower("email"), name="lead_email_unique_ci",
            ),
            models.CheckConstraint(condition=models.Q(score__lte=100), name="lead_score_0_100"),
        ]
        # Each list sort, and each equality filter with the default sort, reads one index in
        # order; the INCLUDE columns (PostgreSQL) let every other filter be checked on the
        # index tuple, so both the page of ids and the COUNT are index-only scans.
        indexes = [
            models.Index(fields=["tenant", "livemode", "created_at", "id"],
                         include=["v1_status", "source"], name="lead_created"),
            models.Index(fields=["tenant", "livemode", "updated_at", "id"],
                         include=["v1_status", "source", "created_at"], name="lead_updated"),
            models.Index(fields=["tenant", "livemode", "score", "id"],
                         include=["v1_status", "source", "created_at"], name="lead_score"),
            models.Index(fields=["tenant", "livemode", "v1_status", "created_at", "id"],
                         include=["source"], name="lead_status_created"),
            models.Index(fields=["tenant", "livemode", "source", "created_at", "id"],
                         include=["v1_status"], name="lead_source_created"),
            models.Index(fields=["tenant", "livemode", "last_active_at", "id"],
                         include=["v1_status"], name="lead_last_active"),
        ]

    def __str__(self) -> str:
        return self.email


class LeadCount(models.Model):
    """How many leads of a tenant and mode fall in one bucket of a sort column (``bucket``), per
    stored status and source. The lead services keep the counts in the same transaction as the
    lead write (``leads.services``), and ``lead_counts_rebuild`` recomputes them for data
    written around the services (bulk loads)."""

    bucket: str  # the subclass's bucket column

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    status = models.CharField(max_length=12, choices=LeadStatus.choices)
    source = models.CharField(max_length=10, choices=LeadSource.choices)
    count = models.IntegerField(default=0)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.bucket} {getattr(self, self.bucket)} {self.status} {self.source}: {self.count}"


class LeadDailyCount(LeadCount):
    """By UTC creation day: the exact totals of lead lists without a COUNT over the leads
    themselves, and the deep pages sorted by ``createdAt``.

    An exact ``COUNT(*)`` over a million leads reads a million index entries on every list
    request; summing these rows reads a few thousand.
    """

    bucket = "day"
    day = models.DateField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "livemode", "day", "status", "source"],
                                    name="lead_daily_count_key"),
        ]


class LeadUpdatedDayCount(LeadCount):
    """By the UTC day of the lead's last update: deep pages sorted by ``updatedAt`` start their
    index scan at the right day instead of an OFFSET over every earlier row
    (``leads.selectors``)."""

    bucket = "day"
    day = models.DateField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "livemode", "day", "status", "source"],
                                    name="lead_updated_day_count_key"),
        ]


class LeadScoreCount(LeadCount):
    """By score (0-100): deep pages sorted by ``score`` start their index scan at the right
    score."""

    bucket = "score"
    score = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "livemode", "score", "status", "source"],
                                    name="lead_score_count_key"),
        ]


class LeadSearch(models.Model):
    """One row per lead: what search reads instead of the lead itself (``leads.search``).

    ``text`` is the lead's searchable values, upper-cased by the database and joined by
    ``leads.search.SEPARATOR``: name, email, company, then the custom field values
    (``custom_at`` characters precede the last separator, so legacy search, which leaves custom
    fields out, can cut them off). The filter and sort columns of search are copied beside it,
    so a search reads these narrow rows and nothing else until its page is known. The lead
    services keep the row in the same transaction as the lead; ``lead_search_rebuild``
    recomputes them for leads written around the services.

    On PostgreSQL two GIN indexes, outside the model state like migration 0002's were
    (migration 0005), start with the tenant: trigrams of ``text`` (``LIKE`` with three letters
    or digits in a row) and its bigrams (shorter terms).
    """

    lead = models.OneToOneField(Lead, on_delete=models.CASCADE, primary_key=True,
                                related_name="+")
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    status = models.CharField(max_length=12, choices=LeadStatus.choices)
    source = models.CharField(max_length=10, choices=LeadSource.choices)
    created_at = models.DateTimeField()
    last_active_at = models.DateTimeField()
    text = models.TextField()
    custom_at = models.PositiveIntegerField()

    class Meta:
        # A page of a search that matches many leads walks one of these in its order and stops
        # at the page's end (``leads.selectors.lead_search``).
        indexes = [
            models.Index(fields=["tenant", "livemode", "last_active_at", "lead"],
                         name="lead_search_active"),
            models.Index(fields=["tenant", "livemode", "created_at", "lead"],
                         name="lead_search_created"),
        ]

    def __str__(self) -> str:
        return f"search row of {self.lead_id}"


class LeadSearchWord(models.Model):
    """How many leads of a tenant and mode have ``word`` among the words of their search text
    (``count``) and among those of name, email and company alone (``base_count``): the exact
    total of a search whose term lies inside one word that only one word contains, without
    visiting the matching leads (``leads.search``). A word is a run of letters and digits of
    the upper-cased text; each lead counts once per distinct word. Kept by the lead services
    in the transaction of the lead write, rebuilt by ``lead_search_rebuild``; words whose counts
    fell to zero stay, at zero."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    word = models.TextField()
    count = models.IntegerField(default=0)
    base_count = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "livemode", "word"],
                                    name="lead_search_word_key"),
        ]

    def __str__(self) -> str:
        return f"{self.word}: {self.count}"


class LeadSort(models.TextChoices):
    """The orders of the staff's list of leads (and of its saved views and exports)."""

    NEWEST = "newest", "Newest first"
    OLDEST = "oldest", "Oldest first"
    UPDATED = "updated", "Recently updated"
    SCORE = "score", "Highest score"


class SavedView(models.Model):
    """A named filter and sort of the staff's list of leads: the search, status, source and
    order of the list, kept under a name by one member of the staff (``owner``; None: the
    admin token) for themselves, or ``shared`` with the whole team.

    A view belongs to the tenant, not to a mode: the same filter reads live or test data,
    whichever the dashboard shows."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=80)
    shared = models.BooleanField(default=False)
    q = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=12, choices=LeadStatus.choices, blank=True)
    source = models.CharField(max_length=10, choices=LeadSource.choices, blank=True)
    sort = models.CharField(max_length=10, choices=LeadSort.choices, default=LeadSort.NEWEST)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["tenant", "name"], name="saved_view_tenant")]

    def __str__(self) -> str:
        return self.name


class JobStatus(models.TextChoices):
    """Where an import or a bulk action stands."""

    UPLOADED = "uploaded", "Waiting for its mapping"  # imports only
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class BulkAction(models.TextChoices):
    STATUS = "status", "Set status"
    OWNER = "owner", "Assign to"
    TAG_ADD = "tag_add", "Add tag"
    TAG_REMOVE = "tag_remove", "Remove tag"
    DELETE = "delete", "Delete"


class LeadBulkJob(models.Model):
    """A bulk action on more leads than a request should change (``leads.bulk``): the action,
    the filter that chose the leads (the list's search, status and source), and how far the
    Celery task got. The task walks the matching leads newest first from ``after_created_at``
    and ``after_id`` (the last lead it finished), so a task run again goes on where the last one
    stopped. The filter is emptied when the job ends: a search term may name a person."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    requested_by = models.CharField(max_length=200)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=12, choices=BulkAction.choices)
    value = models.CharField(max_length=100, blank=True)  # a stored status, a user id, a tag
    filters = models.JSONField(default=dict, blank=True)  # {"q", "status", "source"}
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    processed = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)  # the first refusal, or why it failed
    after_created_at = models.DateTimeField(null=True, blank=True)
    after_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "livemode", "created_at"], name="lead_bulk_job_recent"),
            models.Index(fields=["status", "updated_at"], name="lead_bulk_job_status"),
        ]

    def __str__(self) -> str:
        return f"{self.action} on {self.total} leads ({self.status})"


class ImportDuplicates(models.TextChoices):
    """What an import does with a row whose address is an existing lead's."""

    UPDATE = "update", "Update the existing lead"
    SKIP = "skip", "Skip the row"


class LeadImport(models.Model):
    """A CSV file of leads being imported (``leads.imports``): its header, the mapping of its
    columns to lead fields, what to do with addresses that exist, and how far the Celery task
    got. The rows themselves wait in ``LeadImportRow`` until they are imported. ``errors`` are
    ``{row, column, message}``, never a cell's value."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    requested_by = models.CharField(max_length=200)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="+")
    file_name = models.CharField(max_length=200)
    headers = models.JSONField(default=list)
    mapping = models.JSONField(default=list)  # one target per column ("" ignores it)
    duplicates = models.CharField(max_length=6, choices=ImportDuplicates.choices,
                                  default=ImportDuplicates.UPDATE)
    status = models.CharField(max_length=10, choices=JobStatus.choices,
                              default=JobStatus.UPLOADED)
    total = models.PositiveIntegerField(default=0)
    processed = models.PositiveIntegerField(default=0)
    position = models.PositiveIntegerField(default=0)  # the number of the last row read
    created = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    error = models.CharField(max_length=300, blank=True)  # why the whole import failed
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "livemode", "created_at"], name="lead_import_recent"),
            models.Index(fields=["status", "updated_at"], name="lead_import_status"),
        ]

    def __str__(self) -> str:
        return f"{self.file_name} ({self.status})"


class LeadImportRow(models.Model):
    """One row of an uploaded file, as its cells, until the import has read it: the task
    deletes each batch of rows once imported, so a finished import keeps none. ``number`` is
    the row's line in the file's terms (the header is row 1)."""

    lead_import = models.ForeignKey(LeadImport, on_delete=models.CASCADE, related_name="rows")
    number = models.PositiveIntegerField()
    cells = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lead_import", "number"], name="lead_import_row_key"),
        ]

    def __str__(self) -> str:
        return f"row {self.number} of {self.lead_import_id}"
