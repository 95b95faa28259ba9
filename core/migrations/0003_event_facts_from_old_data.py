"""Rewrites the event rows written before 0002 (their ``data``: the v1 webhook envelope's
``data`` object, and the legacy shape for ``meeting.booked``) into facts in stored vocabulary,
the form ``core.events.payload`` renders (docs/events.md, "Upgrading from the v1-shaped data").

Old rows are told from new ones by shape, type by type (``CONVERTERS``): old ids are
``lead_<32 hex>``, ``conv_…``, ``msg_…`` where facts hold canonical UUID strings, and the old
``meeting.booked`` meeting has ``startsAt`` where facts have ``starts_at``. New rows are left as
they are, so the migration can run on a database that already has both, and running it again
changes nothing.

What the old data holds is kept exactly: every converted row renders on v1 (and, for the three
legacy types, on legacy) the payload the old code sent from it, so that a webhook delivery still
pending retries with the same data. Statuses come back through the tables of
``leads.vocabulary``; where a surface's word stands for more than one stored status, the lead's
row decides only when the row is still as it was at the event (its ``updated_at`` is not later)
and the type is one the legacy surface does not show (the legacy payload of lead.created and
lead.qualified was computed from the v1 word, and must stay what it was). What the old data never
held is taken from what still tells it: fields that never change, or only by a correction (a
lead's ``created_at``, ``source`` and email, a conversation's channel, a message's sequence and
intent), the whole row when it has not changed since the event, the log for a conversation's
handoff; otherwise a neutral default (blank, empty, null, zero), or the event's moment for the
timestamps that the write which emitted it moved.

Batches of ``BATCH`` rows in id order, each converted and saved in its own transaction (the
migration is not atomic): a table of millions of events is never loaded at once, and a run
stopped midway is finished by running it again.

Backwards is a no-op: the converted rows are valid facts, and turning them back into the old
``data`` would need the presenters of both surfaces, which a migration must not import (they will
change); code from before 0002 cannot read facts anyway, so it needs a database from before.

Only historical models (``apps.get_model``) and copies of the small tables it needs: nothing here
imports app code.
"""

import re
import uuid
from datetime import UTC, datetime

from django.db import migrations, transaction

BATCH = 2000
LOOKUP_CHUNK = 500  # ids per IN (...) query: well under SQLite's limit on parameters

# --- copied from leads.vocabulary (stored status <-> each surface's word) -------------------

V1_OF_STORED = {
    "new": "new", "qualifying": "new", "qualified": "qualified", "booked": "qualified",
    "contacted": "contacted", "nurturing": "contacted", "converted": "converted", "lost": "lost",
}
LEGACY_OF_STORED = {
    "new": "new", "qualifying": "qualifying", "qualified": "qualified", "booked": "booked",
    "contacted": "qualifying", "nurturing": "nurturing", "converted": "booked",
    "lost": "disqualified",
}
STORED_OF_V1 = {
    "new": "new", "qualified": "qualified", "contacted": "contacted", "converted": "converted",
    "lost": "lost",
}
STORED_OF_LEGACY = {
    "new": "new", "qualifying": "qualifying", "qualified": "qualified", "booked": "booked",
    "disqualified": "lost", "nurturing": "nurturing",
}


def stored_from_v1(word, current=None):
    """``leads.vocabulary.stored_from_v1``: the word's status, or ``current`` if it shows so."""
    if word is None:
        return None
    if current is not None and V1_OF_STORED[current] == word:
        return current
    return STORED_OF_V1[word]


def stored_from_legacy(word, current=None):
    """``leads.vocabulary.stored_from_legacy``."""
    if current is not None and LEGACY_OF_STORED[current] == word:
        return current
    return STORED_OF_LEGACY[word]


# --- values ---------------------------------------------------------------------------------

V1_ID = re.compile(r"^([a-z]+)_([0-9a-f]{32})$")

# v1 field -> lead column (leads.events.V1_FIELD, reversed).
LEAD_COLUMN = {
    "email": "email", "name": "name", "company": "company", "title": "title", "phone": "phone",
    "status": "status", "score": "score", "source": "source", "tags": "tags",
    "customFields": "custom_fields", "assignedTo": "assigned_to_id", "lastIntent": "last_intent",
}
TEXT_COLUMNS = frozenset({"name", "company", "title", "phone", "last_intent"})
# The lead facts' keys, in leads.events.lead_facts' order.
LEAD_KEYS = ("id", "email", "name", "company", "title", "phone", "status", "score", "source",
             "tags", "custom_fields", "assigned_to_id", "last_intent", "first_seen_at",
             "last_active_at", "created_at", "updated_at")
# Never change once the lead exists, or only by a correction: taken from the row whenever it
# is there.
LEAD_FIXED = ("email", "source", "first_seen_at", "created_at")
CONVERSATION_FIELDS = ("id", "visitor_id", "channel", "status", "lead_id", "assigned_to_id",
                       "message_count", "subject", "summary", "handoff", "started_at",
                       "last_message_at", "updated_at")
CONVERSATION_FIXED = ("visitor_id", "channel", "started_at")
# What the intent a lead.updated moved to may be when no row tells it: the first of these that
# differs from the previous intent (the lead's latest, the vocabulary's catch-all, blank).
INTENT_FALLBACKS = ("other", "")


def is_v1_id(prefix, value):
    match = V1_ID.match(value) if isinstance(value, str) else None
    return match is not None and match.group(1) == prefix


def uuid_of(prefix, value):
    """The canonical UUID string of a v1 id (``lead_<hex>``); None stays None."""
    if value is None:
        return None
    if not is_v1_id(prefix, value):
        raise ValueError(f"not a {prefix} id: {value!r}")
    return str(uuid.UUID(hex=value[len(prefix) + 1:]))


def string(value):
    """A UUID column's value as facts hold it."""
    return None if value is None else str(value)


def stored_timestamp(value):
    """``core.timestamps.stored_timestamp``: ISO 8601, UTC, to the microsecond."""
    return None if value is None else value.astimezone(UTC).isoformat()


def timestamp(text):
    """An API timestamp (``...T09:30:00.123Z``) in the stored form."""
    return None if text is None else stored_timestamp(datetime.fromisoformat(text))


def blank(value):
    """The v1 surface shows a blank optional string as null; the row stores it blank."""
    return "" if value is None else value


def dict_with(data, key):
    return isinstance(data, dict) and isinstance(data.get(key), dict)


# --- telling old rows from new --------------------------------------------------------------

def old_lead_object(data):
    return dict_with(data, "lead") and is_v1_id("lead", data["lead"].get("id"))


def old_lead_id(data):
    return isinstance(data, dict) and is_v1_id("lead", data.get("leadId"))


def old_conversation(data):
    return dict_with(data, "conversation") and is_v1_id("conv", data["conversation"].get("id"))


def old_message(data):
    return dict_with(data, "message") and is_v1_id("msg", data["message"].get("id"))


def old_conversation_id(data):
    return isinstance(data, dict) and is_v1_id("conv", data.get("conversationId"))


def old_meeting(data):
    return dict_with(data, "meeting") and "startsAt" in data["meeting"]


# --- the rows a batch refers to -------------------------------------------------------------

class Rows:
    """The leads, conversations, messages and meetings that one batch of old events names,
    fetched once per batch; and each conversation's first handoff event."""

    def __init__(self, apps, alias, events):
        self.alias = alias
        lead_ids = {event.lead_id for event in events}
        conversation_ids = {event.conversation_id for event in events}
        self.leads = self.fetch(apps.get_model("leads", "Lead"), lead_ids, LEAD_KEYS)
        self.conversations = self.fetch(apps.get_model("conversations", "Conversation"),
                                        conversation_ids, CONVERSATION_FIELDS)
        self.messages = self.fetch(apps.get_model("conversations", "Message"),
                                   referred(events, "message", "msg"),
                                   ("id", "sequence", "intent", "confidence"))
        self.meetings = self.fetch(apps.get_model("conversations", "Meeting"),
                                   referred(events, "meeting", None), ("id", "created_at"))
        self.first_handoffs = self.first_handoff(apps.get_model("core", "Event"),
                                                 conversation_ids)

    def fetch(self, model, ids, fields):
        ids = sorted(pk for pk in ids if pk is not None)
        found = {}
        for start in range(0, len(ids), LOOKUP_CHUNK):
            rows = (model.objects.using(self.alias).filter(pk__in=ids[start:start + LOOKUP_CHUNK])
                    .values(*fields))
            found.update((row["id"], row) for row in rows)
        return found

    def first_handoff(self, event_model, ids):
        """conversation id -> (moment, id) of its first conversation.handoff in the log."""
        ids = sorted(pk for pk in ids if pk is not None)
        first = {}
        for start in range(0, len(ids), LOOKUP_CHUNK):
            rows = (event_model.objects.using(self.alias)
                    .filter(type="conversation.handoff",
                            conversation_id__in=ids[start:start + LOOKUP_CHUNK])
                    .order_by("-occurred_at", "-id")
                    .values_list("conversation_id", "occurred_at", "id"))
            first.update((pk, (at, event_id)) for pk, at, event_id in rows)  # the earliest stays
        return first

    def handed_off_before(self, event):
        """Whether the conversation had been handed off by the event (a handoff stays on the
        conversation as history, whatever follows)."""
        first = self.first_handoffs.get(event.conversation_id)
        return first is not None and first[0] <= event.occurred_at

    def lead(self, pk):
        return self.leads.get(uuid.UUID(pk))

    def unchanged_lead(self, pk, event):
        """The lead's row if it is still as it was at the event; else None."""
        row = self.lead(pk)
        return row if row is not None and row["updated_at"] <= event.occurred_at else None


def referred(events, key, prefix):
    """The UUIDs of ``data[key]["id"]`` in the events that have one (v1 ids if ``prefix``)."""
    found = set()
    for event in events:
        value = event.facts.get(key)
        pk = value.get("id") if isinstance(value, dict) else None
        if pk is not None:
            found.add(uuid.UUID(uuid_of(prefix, pk) if prefix else pk))
    return found


# --- lead facts -----------------------------------------------------------------------------

def lead_defaults(event):
    """A lead's facts where nothing tells better: blank, empty, the model's defaults; the event's
    moment for the timestamps that a lead write moves as it emits."""
    moment = stored_timestamp(event.occurred_at)
    return {"id": None, "email": "", "name": "", "company": "", "title": "", "phone": "",
            "status": "new", "score": 0, "source": "api", "tags": [], "custom_fields": {},
            "assigned_to_id": None, "last_intent": "", "first_seen_at": None,
            "last_active_at": moment, "created_at": None, "updated_at": moment}


def lead_row_facts(row, keys, event):
    facts = {key: row[key] for key in keys}
    for key in ("id", "assigned_to_id"):
        if key in facts:
            facts[key] = string(facts[key])
    for key in ("first_seen_at", "last_active_at", "created_at", "updated_at"):
        if key in facts:
            facts[key] = stored_timestamp(facts[key])
    if "last_active_at" in facts and row["last_active_at"] > event.occurred_at:
        del facts["last_active_at"]  # moved by a later chat message, which bumps nothing else
    return facts


def lead(event, rows, known):
    """Lead facts: ``known`` (from the old data) over what the lead's row tells (its fixed
    fields, or all of it if unchanged since) over the defaults."""
    facts = lead_defaults(event)
    row = rows.lead(known["id"])
    if row is not None:
        facts.update(lead_row_facts(row, LEAD_FIXED, event))
    if rows.unchanged_lead(known["id"], event) is not None:
        facts.update(lead_row_facts(row, LEAD_KEYS, event))
    facts.update(known)
    return {key: facts[key] for key in LEAD_KEYS}


def exact_status(rows, pk, event):
    row = rows.unchanged_lead(pk, event)
    return None if row is None else row["status"]


def summary_known(old, status):
    """The ``lead`` object of old lead.created / lead.qualified / lead.converted data."""
    return {"id": uuid_of("lead", old["id"]), "email": old["email"], "name": blank(old["name"]),
            "company": blank(old["company"]), "status": status, "score": old["score"]}


def full_lead_known(old, status):
    """The full v1 lead of old lead.updated / lead.deleted data."""
    return {
        **summary_known(old, status),
        "title": blank(old["title"]), "phone": blank(old["phone"]), "source": old["source"],
        "tags": old["tags"], "custom_fields": old["customFields"],
        "assigned_to_id": uuid_of("user", old["assignedTo"]),
        "first_seen_at": timestamp(old["firstSeenAt"]),
        "last_active_at": timestamp(old["lastActiveAt"]),
        "created_at": timestamp(old["createdAt"]), "updated_at": timestamp(old["updatedAt"]),
    }


def previous_value(column, value):
    """A ``previousValues`` entry as the lead column stored it."""
    if column == "status":
        return stored_from_v1(value)
    if column == "assigned_to_id":
        return uuid_of("user", value)
    if column in TEXT_COLUMNS:
        return blank(value)
    return value


def intent_after(previous, current):
    """The intent a lead.updated moved to, which v1 data never showed: the lead's intent now if
    that differs from the previous one (exact when no later change), else a stand-in that does,
    so the change still shows."""
    for value in (current, *INTENT_FALLBACKS):
        if (value or None) != (previous or None):
            return value
    return ""


def lead_created(event, data, rows):
    old = data["lead"]
    created_at = timestamp(old["createdAt"])
    known = {**summary_known(old, stored_from_v1(old["status"])), "source": old["source"],
             "first_seen_at": created_at, "last_active_at": created_at, "created_at": created_at}
    return {"lead": lead(event, rows, known)}


def lead_updated(event, data, rows):
    old = data["lead"]
    pk = uuid_of("lead", old["id"])
    after = lead(event, rows, full_lead_known(
        old, stored_from_v1(old["status"], exact_status(rows, pk, event))))
    previous = {LEAD_COLUMN[field]: previous_value(LEAD_COLUMN[field], data["previousValues"][field])
                for field in data["changedFields"]}
    if "last_intent" in previous:
        row = rows.lead(pk)
        after["last_intent"] = intent_after(previous["last_intent"],
                                            row["last_intent"] if row else "")
    return {"lead": after, "previous": previous}


def lead_qualified(event, data, rows):
    old = data["lead"]
    return {"lead": lead(event, rows, summary_known(old, stored_from_v1(old["status"]))),
            "previous_status": stored_from_v1(old["previousStatus"]),
            "reason": data["qualificationReason"]}


def lead_converted(event, data, rows):
    old = data["lead"]
    status = stored_from_v1(old["status"], exact_status(rows, uuid_of("lead", old["id"]), event))
    return {"lead": lead(event, rows, summary_known(old, status)),
            "previous_status": stored_from_v1(old["previousStatus"])}


def conversion_completed(event, data, rows):
    known = {"id": uuid_of("lead", data["leadId"]), "status": "converted", "score": data["score"]}
    return {"lead": lead(event, rows, known),
            "previous_status": stored_from_v1(data["previousStatus"])}


def lead_score_changed(event, data, rows):
    return {"lead_id": uuid_of("lead", data["leadId"]), "score": data["score"],
            "previous_score": data["previousScore"]}


def lead_deleted(event, data, rows):
    old = data["lead"]
    return {"lead": lead(event, rows, full_lead_known(old, stored_from_v1(old["status"])))}


# --- conversation facts ---------------------------------------------------------------------

def conversation_row_facts(row, keys):
    facts = {key: row[key] for key in keys}
    for key in ("id", "lead_id", "assigned_to_id"):
        if key in facts:
            facts[key] = string(facts[key])
    for key in ("started_at", "last_message_at"):
        if key in facts:
            facts[key] = stored_timestamp(facts[key])
    if "handoff" in facts:
        facts["has_handoff"] = facts.pop("handoff") is not None
    return facts


def conversation(event, rows, known):
    """Conversation facts, as ``lead`` builds lead facts. By default, the lead is the event's
    (every old conversation event named the conversation's lead), and whether and since when it
    was handed off comes from the log; after a handoff its status is taken to be handed_off,
    though the agent may have had it back (which the old code did not log)."""
    handed_off = rows.handed_off_before(event)
    facts = {"id": string(event.conversation_id), "visitor_id": "", "channel": "",
             "status": "handed_off" if handed_off else "active",
             "lead_id": string(event.lead_id), "assigned_to_id": None, "message_count": 0,
             "subject": "", "summary": "", "has_handoff": handed_off, "started_at": None,
             "last_message_at": None}
    row = rows.conversations.get(event.conversation_id)
    if row is not None:
        facts.update(conversation_row_facts(row, CONVERSATION_FIXED))
    if row is not None and row["updated_at"] <= event.occurred_at:
        keys = [key for key in CONVERSATION_FIELDS if key != "updated_at"]
        facts.update(conversation_row_facts(row, keys))
    facts.update(known)
    return facts


def brief_known(old):
    """The conversation of old conversation.started / .completed data."""
    return {"id": uuid_of("conv", old["id"]), "visitor_id": old["visitorId"],
            "channel": old["channel"], "status": old["status"],
            "lead_id": uuid_of("lead", old["leadId"]), "message_count": old["messageCount"],
            "subject": blank(old["subject"]), "summary": blank(old["summary"]),
            "started_at": timestamp(old["startedAt"]),
            "last_message_at": timestamp(old["lastMessageAt"])}


def conversation_started(event, data, rows):
    return {"conversation": conversation(event, rows, brief_known(data["conversation"]))}


def conversation_completed(event, data, rows):
    known = brief_known(data["conversation"])
    row = rows.conversations.get(event.conversation_id)
    if row is not None:  # an ended conversation is neither assigned nor handed off again
        known.update(conversation_row_facts(row, ("assigned_to_id", "handoff")))
    return {"conversation": conversation(event, rows, known), "reason": data["reason"]}


def conversation_handoff(event, data, rows):
    old = data["conversation"]
    known = {"id": uuid_of("conv", old["id"]), "lead_id": uuid_of("lead", old["leadId"]),
             "message_count": old["messageCount"], "status": old["status"],
             "assigned_to_id": uuid_of("user", old["assignedTo"]), "has_handoff": True}
    first = rows.first_handoffs.get(event.conversation_id)
    return {"conversation": conversation(event, rows, known), "handoff": data["handoff"],
            "first_handoff": first is not None and first[1] == event.pk}


def message(data, rows):
    old = data["message"]
    pk = uuid_of("msg", old["id"])
    row = rows.messages.get(uuid.UUID(pk)) or {"sequence": None, "intent": "", "confidence": None}
    return {"id": pk, "sequence": row["sequence"], "role": old["role"],
            "content": old["content"],
            "intent": blank(old["intent"]) if "intent" in old else row["intent"],
            "confidence": old["confidence"] if "confidence" in old else row["confidence"],
            "author_id": uuid_of("user", data.get("author")),
            "created_at": timestamp(old["createdAt"])}


def message_event(event, data, rows):
    facts = message(data, rows)
    known = {"last_message_at": facts["created_at"]}
    if facts["sequence"] is not None:
        known["message_count"] = facts["sequence"] + 1
    if facts["author_id"] is not None:  # a person answers only a conversation handed to them
        known.update(status="handed_off", assigned_to_id=facts["author_id"], has_handoff=True)
    return {"conversation": conversation(event, rows, known), "message": facts}


def intent_high_value(event, data, rows):
    return {"conversation": conversation(event, rows, {}),
            "lead_id": uuid_of("lead", data["leadId"]), "intent": data["intent"],
            "confidence": data["confidence"], "signals": data["signals"],
            "estimated_deal_size": data["estimatedDealSize"]}


def meeting_booked(event, data, rows):
    """The legacy shape: UUID strings, the lead's stored name and company, legacy words."""
    old_lead, old_meeting = data["lead"], data["meeting"]
    status = stored_from_legacy(old_lead["status"], exact_status(rows, old_lead["id"], event))
    known = {"id": old_lead["id"], "email": old_lead["email"], "name": old_lead["name"],
             "company": old_lead["company"], "status": status,
             "score": old_lead["qualificationScore"]}
    row = rows.meetings.get(uuid.UUID(old_meeting["id"]))
    created_at = row["created_at"] if row else event.occurred_at  # booked just before
    return {
        "conversation": conversation(event, rows, {}),
        "lead": lead(event, rows, known),
        "meeting": {"id": old_meeting["id"], "starts_at": timestamp(old_meeting["startsAt"]),
                    "ends_at": timestamp(old_meeting["endsAt"]),
                    "time_zone": old_meeting["timezone"],
                    "conversation_id": old_meeting["conversationId"], "status": "scheduled",
                    "created_at": stored_timestamp(created_at)},
    }


# type -> (is the row's data old-shaped?, its facts). The service's own types
# (conversation.lead_linked, .assigned, .handed_back, .deleted) came with the facts.
CONVERTERS = {
    "lead.created": (old_lead_object, lead_created),
    "lead.updated": (old_lead_object, lead_updated),
    "lead.qualified": (old_lead_object, lead_qualified),
    "lead.converted": (old_lead_object, lead_converted),
    "conversion.completed": (old_lead_id, conversion_completed),
    "lead.score_changed": (old_lead_id, lead_score_changed),
    "lead.deleted": (old_lead_object, lead_deleted),
    "conversation.started": (old_conversation, conversation_started),
    "conversation.completed": (old_conversation, conversation_completed),
    "conversation.handoff": (old_conversation, conversation_handoff),
    "message.received": (old_message, message_event),
    "message.sent": (old_message, message_event),
    "intent.high_value": (old_conversation_id, intent_high_value),
    "meeting.booked": (old_meeting, meeting_booked),
}


# --- the run --------------------------------------------------------------------------------

def convert_batch(apps, alias, events):
    """Rewrites the old-shaped events among ``events``; returns how many."""
    old = [event for event in events if CONVERTERS[event.type][0](event.facts)]
    if not old:
        return 0
    rows = Rows(apps, alias, old)
    for event in old:
        try:
            event.facts = CONVERTERS[event.type][1](event, event.facts, rows)
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"event {event.pk} ({event.type}): cannot read its old data: "
                             f"{error!r}") from error
    event_model = apps.get_model("core", "Event")
    with transaction.atomic(using=alias):
        event_model.objects.using(alias).bulk_update(old, ["facts"], batch_size=BATCH)
    return len(old)


def forward(apps, schema_editor):
    alias = schema_editor.connection.alias
    events = (apps.get_model("core", "Event").objects.using(alias)
              .filter(type__in=list(CONVERTERS)).order_by("id")
              .only("id", "type", "facts", "lead", "conversation_id", "occurred_at"))
    last = None
    while True:
        page = events if last is None else events.filter(id__gt=last)
        batch = list(page[:BATCH])
        if not batch:
            return
        convert_batch(apps, alias, batch)
        last = batch[-1].pk


class Migration(migrations.Migration):

    atomic = False

    dependencies = [
        ('conversations', '0001_initial'),
        ('core', '0002_event_facts'),
        ('leads', '0004_sort_counts'),
    ]

    operations = [
        migrations.RunPython(forward, migrations.RunPython.noop, elidable=True),
    ]
