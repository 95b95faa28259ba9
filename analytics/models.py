"""The analytics tables: visitor-days and the per-day rollups the endpoints read."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from core.models import EventType

# The filter values of the v1 activity feed (the specification's "Activity types", and the
# meeting lifecycle's: docs/meetings.md; erasures and retention runs: docs/privacy.md).
ACTIVITY_TYPES = frozenset({
    EventType.DATA_ERASED,
    EventType.DATA_EXPIRED,
    EventType.MEETING_BOOKED,
    EventType.MEETING_RESCHEDULED,
    EventType.MEETING_CANCELLED,
    EventType.LEAD_CREATED,
    EventType.LEAD_QUALIFIED,
    EventType.LEAD_SCORE_CHANGED,
    EventType.CONVERSATION_STARTED,
    EventType.CONVERSATION_HANDOFF,
    EventType.CONVERSION_COMPLETED,
    EventType.INTENT_HIGH_VALUE,
})


# --- rollups ------------------------------------------------------------------------------
#
# The analytics endpoints read these small per-day tables instead of the millions of leads,
# conversations and messages behind them (docs/analytics.md, "Rollups"). The services keep them
# exact in the same transaction as the writes they count (``analytics.rollups``);
# ``analytics.rollups.rollups_rebuild`` recomputes them from the raw rows.
#
# Each counter row also carries a ``shard`` (0-3, from the counted record's id): the writes of
# one busy day are spread over four rows instead of queueing on one row lock. Readers sum over
# the shards; a rebuild writes everything to shard 0, which sums the same.

ROLLUP_SHARDS = 4


class VisitorDay(models.Model):
    """What one visitor did on one channel during one UTC day: the unit of the funnel's first
    two stages (docs/analytics.md, "Visitors and engagement").

    ``loads`` counts the widget loads recorded by ``analytics.services.record_widget_visit``,
    ``chats`` the conversations the visitor started that day, ``leads`` the leads captured in
    the visitor's conversations that day (and not deleted since). The funnel counts a
    visitor-day that produced leads as those leads, and one that produced none once
    (``ChannelDailyStat.uncaptured_visitors`` and ``uncaptured_engaged``), so that every lead
    is also a visitor and an engaged one. Kept by ``analytics.rollups`` in the writers'
    transactions; a row whose counters all went back to 0 stays and counts for nothing.
    """

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    day = models.DateField()
    channel = models.CharField(max_length=10, default="web_chat")
    visitor_id = models.CharField(max_length=200)
    loads = models.IntegerField(default=0)
    chats = models.IntegerField(default=0)
    leads = models.IntegerField(default=0)
    first_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "livemode", "day", "channel", "visitor_id"],
                                    name="visitor_day_key"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.channel} {self.visitor_id}"


class ChannelDailyStat(models.Model):
    """Per UTC day and channel: the visitor-days that produced no lead (the funnel's Visitors
    and Engaged besides the leads), and the conversations started that day with what became of
    them (lead produced, handed off, messages, agent response times).

    Every conversation counter is attributed to the day the conversation started, so a
    period's numbers describe one population: the conversations started in it.
    """

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    day = models.DateField()
    channel = models.CharField(max_length=10)
    shard = models.PositiveSmallIntegerField(default=0)
    # Visitor-days (``VisitorDay``) without a lead captured: all of them, and those that chatted.
    uncaptured_visitors = models.IntegerField(default=0)
    uncaptured_engaged = models.IntegerField(default=0)
    conversations = models.IntegerField(default=0)
    converted = models.IntegerField(default=0)  # linked to a lead
    handed_off = models.IntegerField(default=0)
    messages = models.BigIntegerField(default=0)
    responses = models.BigIntegerField(default=0)  # agent replies directly after a visitor message
    # Their summed delays in microseconds: exact integers, whoever adds them up.
    response_us = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "livemode", "day", "channel", "shard"],
                                    name="channel_daily_stat_key"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.channel}/{self.shard}"


class LeadJourney(models.Model):
    """When a lead first reached each funnel stage, and the conversation's channel and visitor
    that captured it.

    Kept by the lead and meeting services. It lets a change to a lead (its source, its score,
    its deletion) move exactly that lead's contributions in ``LeadDailyStat`` and
    ``VisitorDay``. A lead with no capture channel and no stage reached yet has no row: absent
    means blank.
    """

    lead = models.OneToOneField("leads.Lead", on_delete=models.CASCADE, primary_key=True,
                                related_name="analytics_journey")
    # The channel of the conversation that captured the lead; blank for leads created elsewhere.
    channel = models.CharField(max_length=10, blank=True)
    visitor_id = models.CharField(max_length=200, blank=True)  # that conversation's visitor
    qualified_at = models.DateTimeField(null=True, blank=True)  # first lead.qualified
    booked_at = models.DateTimeField(null=True, blank=True)  # first meeting booked
    converted_at = models.DateTimeField(null=True, blank=True)  # first lead.converted

    def __str__(self) -> str:
        return f"journey of {self.lead_id}"


class LeadDailyStat(models.Model):
    """Per UTC day, lead source and capture channel: leads created that day (with their summed
    current score, how many have reached qualified or better as the legacy rate counts it, and
    how far each has gone down the funnel since), and leads that first became qualified, had a
    meeting booked, or converted that day."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, db_index=False,
                               related_name="+")
    livemode = models.BooleanField()
    day = models.DateField()
    source = models.CharField(max_length=10)
    channel = models.CharField(max_length=10, blank=True)
    shard = models.PositiveSmallIntegerField(default=0)
    created = models.IntegerField(default=0)
    score_sum = models.BigIntegerField(default=0)
    reached = models.IntegerField(default=0)  # of those created: ever qualified, or converted
    # Of those created, how many have reached the stage or a later one (the funnel's cohort:
    # a converted lead has been qualified and booked as far as the funnel is concerned).
    cohort_qualified = models.IntegerField(default=0)
    cohort_booked = models.IntegerField(default=0)
    cohort_converted = models.IntegerField(default=0)
    qualified = models.IntegerField(default=0)
    booked = models.IntegerField(default=0)
    converted = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "livemode", "day", "source", "channel", "shard"],
                name="lead_daily_stat_key"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.source}/{self.channel or '-'}/{self.shard}"
