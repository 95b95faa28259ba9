"""Leads' addresses in the one form the lead services now keep (``core.emails``: NFKC, the
domain case-folded and IDNA-encoded), so that every stored address is one the published schemas
allow and uniqueness compares like with like (docs/leads.md, "Email addresses").

Per tenant and mode, oldest lead first. A lead whose address already has the kept form is left
alone. Another takes its kept form when no other lead of the tenant and mode holds it (in any
case); when one does (a look-alike such as ``ſam@…`` beside ``sam@…``, or ``a@bücher.example``
beside ``a@xn--bcher-kva.example``), the lead keeps its address as stored: two people's records
are never merged, nor an address made up. Those leads, and those whose address has no kept form
(a dotless ``ı`` in the local part, a bracketed IP address), are named by id in a warning of
the ``salesagent.migrations`` log, for the staff to merge or correct; no address is logged.

The search rows and word counts of every tenant and mode where an address changed are rebuilt
from the leads (as migration 0005 filled them).
"""

import logging
import re
from collections import Counter

from django.db import migrations

from core.emails import refolded

logger = logging.getLogger("salesagent.migrations")

# As migration 0005 (and leads.search): the searched values upper-cased and joined by the unit
# separator, and the length of name, email and company.
SEARCH_TEXT = """
UPDATE "leads_leadsearch" SET
    "text" = (SELECT UPPER("name" || %s || "email" || %s || "company" || %s || "custom_fields_text")
              FROM "leads_lead" WHERE "leads_lead"."id" = "leads_leadsearch"."lead_id"),
    "custom_at" = (SELECT LENGTH(UPPER("name" || %s || "email" || %s || "company"))
                   FROM "leads_lead" WHERE "leads_lead"."id" = "leads_leadsearch"."lead_id")
WHERE "tenant_id" = %s AND "livemode" = %s
"""
WORD = re.compile(r"[0-9A-Za-z\u0080-\U0010ffff]+")  # as leads.search._WORD


def _normalise_group(lead, tenant_id, livemode) -> tuple[int, list, list]:
    """Normalises one tenant's leads in one mode; returns how many changed, and the ids of the
    leads left as they were because of a collision, and because their address has no kept form."""
    rows = list(lead.objects.filter(tenant_id=tenant_id, livemode=livemode)
                .order_by("created_at", "id").values_list("id", "email"))
    holder = {email.lower(): lead_id for lead_id, email in rows}
    changed, collided, unfit = 0, [], []
    for lead_id, email in rows:
        kept = refolded(email)
        if kept is None:
            unfit.append(lead_id)
            continue
        if kept == email:
            continue
        other = holder.get(kept.lower())
        if other is not None and other != lead_id:
            collided.append(lead_id)
            continue
        lead.objects.filter(pk=lead_id).update(email=kept)
        if holder.get(email.lower()) == lead_id:
            del holder[email.lower()]
        holder[kept.lower()] = lead_id
        changed += 1
    return changed, collided, unfit


def _rebuild_search(apps, schema_editor, tenant_id, livemode) -> None:
    search, word = apps.get_model("leads", "LeadSearch"), apps.get_model("leads", "LeadSearchWord")
    tenant = search._meta.get_field("tenant").get_db_prep_value(tenant_id,
                                                                 schema_editor.connection)
    schema_editor.execute(SEARCH_TEXT, ["\x1f"] * 5 + [tenant, livemode])
    counts, base_counts = Counter(), Counter()
    texts = search.objects.filter(tenant_id=tenant_id, livemode=livemode).values_list(
        "text", "custom_at")
    for text, custom_at in texts.iterator(chunk_size=10_000):
        counts.update(set(WORD.findall(text)))
        base_counts.update(set(WORD.findall(text[:custom_at])))
    word.objects.filter(tenant_id=tenant_id, livemode=livemode).delete()
    word.objects.bulk_create(
        (word(tenant_id=tenant_id, livemode=livemode, word=w, count=n, base_count=base_counts[w])
         for w, n in counts.items()), batch_size=5000)


def normalise_emails(apps, schema_editor):
    lead = apps.get_model("leads", "Lead")
    groups = lead.objects.values_list("tenant_id", "livemode").distinct().order_by()
    for tenant_id, livemode in list(groups):
        changed, collided, unfit = _normalise_group(lead, tenant_id, livemode)
        if changed:
            _rebuild_search(apps, schema_editor, tenant_id, livemode)
        if collided:
            logger.warning("Leads %s keep their address: its normalised form is another lead's "
                           "(merge or correct them)", ", ".join(map(str, collided)))
        if unfit:
            logger.warning("Leads %s keep their address: it has no normalised form the API "
                           "allows (correct them)", ", ".join(map(str, unfit)))


class Migration(migrations.Migration):

    dependencies = [
        ("leads", "0005_lead_search_table"),
    ]

    operations = [
        # Forwards only: the former spellings are not kept, and the kept form is an address
        # like any other to the code before this migration.
        migrations.RunPython(normalise_emails, migrations.RunPython.noop, elidable=False),
    ]
