"""LeadDailyCount: the lead services keep the daily counts exact, and a rebuild agrees."""

from __future__ import annotations

import io
import random
from collections import Counter
from datetime import UTC, datetime, timedelta

from django.core.management import call_command
from django.db.models.functions import TruncDate

from leads.models import Lead, LeadDailyCount, LeadScoreCount, LeadUpdatedDayCount
from leads.services import lead_delete, lead_update
from leads.vocabulary import LeadSource, LeadStatus
from tests.factories import make_lead

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _actual(tenant, livemode) -> Counter:
    rows = (Lead.objects.filter(tenant=tenant, livemode=livemode)
            .annotate(day=TruncDate("created_at", tzinfo=UTC))
            .values_list("day", "status", "source"))
    return Counter(rows)


def _counted(tenant, livemode) -> Counter:
    rows = LeadDailyCount.objects.filter(tenant=tenant, livemode=livemode, count__gt=0)
    return Counter({(r.day, r.status, r.source): r.count for r in rows})


def _actual_by(tenant, livemode, bucket: str) -> Counter:
    leads = Lead.objects.filter(tenant=tenant, livemode=livemode)
    if bucket == "updated_day":
        leads = leads.annotate(bucket=TruncDate("updated_at", tzinfo=UTC))
        return Counter(leads.values_list("bucket", "status", "source"))
    return Counter(leads.values_list("score", "status", "source"))


def _counted_by(tenant, livemode, bucket: str) -> Counter:
    model, column = ((LeadUpdatedDayCount, "day") if bucket == "updated_day"
                     else (LeadScoreCount, "score"))
    rows = model.objects.filter(tenant=tenant, livemode=livemode, count__gt=0)
    return Counter({(getattr(r, column), r.status, r.source): r.count for r in rows})


def test_counts_follow_every_write(kit, stranger):
    rng = random.Random(7)
    leads = []
    for i in range(60):
        kit_or_stranger = kit if i % 5 else stranger
        leads.append(make_lead(kit_or_stranger, mode="live" if i % 3 else "test",
                               status=rng.choice(LeadStatus.values),
                               source=rng.choice(LeadSource.values),
                               created_at=T0 + timedelta(hours=rng.randrange(24 * 5))))
    for lead in rng.sample(leads, 30):
        lead_update(lead=lead, changes={"status": rng.choice(LeadStatus.values),
                                        "source": rng.choice(LeadSource.values),
                                        "score": rng.randrange(101)})
    for lead in rng.sample(leads, 15):
        lead_delete(lead=lead)
    for tenant in (kit.tenant, stranger.tenant):
        for livemode in (True, False):
            assert _counted(tenant, livemode) == _actual(tenant, livemode)
            for bucket in ("updated_day", "score"):
                assert _counted_by(tenant, livemode, bucket) == _actual_by(tenant, livemode,
                                                                           bucket)
    # Nothing is counted below zero, and deletes leave no stray rows behind.
    for model in (LeadDailyCount, LeadUpdatedDayCount, LeadScoreCount):
        assert not model.objects.filter(count__lt=0).exists()


def test_rebuild_recomputes_from_the_leads(kit):
    for i in range(10):
        make_lead(kit, created_at=T0 + timedelta(hours=9 * i), source="chat")
    Lead.objects.filter(tenant=kit.tenant).update(status="lost")  # written around the services
    assert _counted(kit.tenant, True) != _actual(kit.tenant, True)
    Lead.objects.filter(tenant=kit.tenant).update(score=42)
    out = io.StringIO()
    call_command("rebuild_counts", str(kit.tenant.pk), "--mode", "live", stdout=out)
    assert out.getvalue() == (f"{kit.tenant.public_id} live: counts, search rows and rollups "
                              "rebuilt from 10 leads\n")
    assert _counted(kit.tenant, True) == _actual(kit.tenant, True)
    for bucket in ("updated_day", "score"):
        assert _counted_by(kit.tenant, True, bucket) == _actual_by(kit.tenant, True, bucket)


def test_days_are_utc_days(kit):
    late = datetime(2026, 1, 1, 23, 30, tzinfo=UTC)
    make_lead(kit, created_at=late)
    [row] = LeadDailyCount.objects.all()
    assert str(row.day) == "2026-01-01"
