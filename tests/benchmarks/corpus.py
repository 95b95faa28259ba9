"""Generated text for the benchmarks of issue 27: the knowledge base of a fictional B2B software
company, and what its visitors write.

Written as such documents and visitors write (plans, features, integrations, security, support,
with figures), and varied enough that no two messages of a run are the same text: the embedding
model keeps the vectors of recent texts (``core.embeddings``), so a message asked twice would
measure that cache, not the model, while a real visitor's message is new to the server.

``seed_tenant`` stores a knowledge base of any size as indexing stores one (the chunks with their
full-text rows through ``knowledge.index.store_chunks``, their vectors through
``knowledge.vectors.store_vectors``), except that a chunk's vector is the normalised sum of its
sentences' real embeddings: a pool of a few thousand sentences is embedded once, so that 100,000
chunks take a minute to store instead of the twenty the model would take to read them.
"""

from __future__ import annotations

import random
import time

import numpy as np
from django.db import connection, transaction

from core import embeddings
from knowledge import index, vectors
from knowledge.chunking import ChunkText
from knowledge.models import Chunk, ChunkVector, Document, DocumentStatus
from tenants.models import Tenant
from tenants.services import tenant_create

PRODUCT = "Lumenary"
FEATURES = [
    "the chat widget", "lead scoring", "the CRM sync", "meeting booking", "the analytics dashboard",
    "outgoing webhooks", "the REST API", "single sign-on", "audit logs", "data export",
    "email follow-ups", "the mobile app", "custom fields", "routing rules", "the knowledge base",
    "shared inboxes", "canned replies", "the visitor timeline", "round-robin assignment",
    "SLA policies", "satisfaction surveys", "two-factor authentication", "role permissions",
    "the sandbox workspace", "bulk import", "scheduled reports", "the Slack alerts",
    "conversation tags", "business hours", "the holiday calendar", "the status page",
    "IP allow-lists", "data retention rules", "the translation layer", "video calls",
    "the calendar sync", "lead enrichment", "spam filtering", "the offline form",
    "the proactive greeting",
]
PLANS = ["Starter", "Team", "Growth", "Business", "Scale", "Enterprise"]
INTEGRATIONS = [
    "Salesforce", "HubSpot", "Pipedrive", "Zendesk", "Intercom", "Slack", "Microsoft Teams",
    "Google Calendar", "Outlook", "Zapier", "Segment", "Stripe", "Shopify", "Jira", "Freshdesk",
    "Zoho CRM", "Calendly", "Mailchimp", "Okta", "Azure AD",
]
REGIONS = ["Frankfurt", "Dublin", "Virginia", "Oregon", "Sydney", "Singapore", "Montreal",
           "Stockholm", "Tokyo", "London"]
UNITS = ["seats", "agents", "contacts", "conversations", "workspaces", "API calls", "GB of storage",
         "automation rules", "brands", "custom fields", "reports", "team members"]
PERIODS = ["day", "week", "month", "year", "hour"]
ROLES = ["admin", "owner", "billing contact", "team lead", "agent", "developer", "auditor"]
SECTIONS = ["Settings", "Billing", "Integrations", "Security", "Team", "Channels", "Reports",
            "Automation", "Developers", "Workspace"]
DATA = ["conversation transcripts", "contact records", "attachments", "audit events",
        "usage metrics", "invoices", "call recordings", "backups"]

_SENTENCES = [
    "{Feature} is included in the {plan} plan at no extra cost.",
    "On the {plan} plan, {feature} supports up to {n} {unit} per {period}.",
    "To turn on {feature}, an {role} opens {section} and switches it on for the workspace.",
    "{integration} syncs contacts and deals every {m} minutes, in both directions.",
    "We store {data} in {region} and encrypt them at rest with AES-256.",
    "Annual contracts can be cancelled within the first {d} days for a prorated refund.",
    "The {plan} plan costs ${price} per seat per month when billed annually.",
    "Each {plan} workspace comes with {n} {unit} and more can be added at any time.",
    "{Feature} works with {integration}, so your team keeps one record of every customer.",
    "Support answers within {h} hours on weekdays for {plan} customers.",
    "An {role} can limit who sees {feature} with a custom role.",
    "{data} are kept for {d} days and then deleted for good.",
    "If {integration} is unreachable, {feature} retries for up to {h} hours before it gives up.",
    "The {plan} plan adds {feature} and {feature2} to everything in the {plan2} plan.",
    "You can export {data} as CSV or JSON from {section} whenever you like.",
    "New workspaces start with a {d}-day trial of the {plan} plan, no card needed.",
    "{Feature} is available in {n} languages, including German, French and Spanish.",
    "Our uptime target for {feature} is 99.{nine}% measured over each calendar month.",
    "Discounts of {pct}% apply to nonprofits and schools on any plan above {plan2}.",
    "Requests to the REST API are limited to {n} per {period} on the {plan} plan.",
    "The onboarding call for {plan} customers covers {feature} and the {integration} setup.",
    "Invoices are sent on the {day} of each month to the billing contact by email.",
    "{Feature} keeps a history of every change, with who made it and when.",
    "Single sign-on through {integration} is part of the {plan} plan.",
    "When a seat is removed, its {data} stay in the workspace for {d} days.",
    "Most teams of {n} {unit} or more choose the {plan} plan.",
    "A sandbox lets an {role} try {feature} before it goes live.",
    "Backups run every {h} hours and are copied to a second region, {region}.",
    "Upgrading from {plan2} to {plan} takes effect at once and is billed pro rata.",
    "{Feature} can send a summary to {integration} at the end of each {period}.",
]
_DAYS = ["first", "second", "fifth", "tenth", "fifteenth", "last working day"]


def _fill(template: str, rng: random.Random) -> str:
    feature, feature2 = rng.sample(FEATURES, 2)
    plan, plan2 = rng.sample(PLANS, 2)
    return template.format(
        Feature=feature[:1].upper() + feature[1:], feature=feature, feature2=feature2,
        plan=plan, plan2=plan2, n=rng.choice([3, 5, 10, 20, 25, 50, 100, 250, 500, 1000, 5000]),
        unit=rng.choice(UNITS), period=rng.choice(PERIODS), role=rng.choice(ROLES),
        section=rng.choice(SECTIONS), integration=rng.choice(INTEGRATIONS), m=rng.choice([5, 10, 15, 30]),
        data=rng.choice(DATA), region=rng.choice(REGIONS), d=rng.choice([7, 14, 30, 60, 90, 180, 365]),
        price=rng.choice([9, 15, 19, 29, 39, 49, 59, 79, 89, 99, 149]),
        h=rng.choice([1, 2, 4, 8, 12, 24, 48]),
        nine=rng.choice(["5", "9", "95", "99"]), pct=rng.choice([10, 15, 20, 25, 30, 40, 50]),
        day=rng.choice(_DAYS),
    )


def sentence(rng: random.Random) -> str:
    return _fill(rng.choice(_SENTENCES), rng)


def heading(rng: random.Random) -> str:
    feature = rng.choice(FEATURES).removeprefix("the ")
    return rng.choice([f"{feature[:1].upper()}{feature[1:]}", f"{feature.capitalize()} on the "
                       f"{rng.choice(PLANS)} plan", f"Setting up {feature}",
                       f"{rng.choice(INTEGRATIONS)} and {feature}", f"{rng.choice(PLANS)} plan"])


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def markdown_document(rng: random.Random, *, sections: int, title: str) -> str:
    """A help-centre handbook: sections of one to four paragraphs, as the evaluation's documents
    (agent/eval/data/knowledge/) are written, now and then a list."""
    parts = [f"# {title}", paragraph(rng, 3)]
    for _ in range(sections):
        parts.append(f"## {heading(rng)}")
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.15:
                parts.append("\n".join(f"- {sentence(rng)}" for _ in range(rng.randint(2, 4))))
            else:
                parts.append(paragraph(rng, rng.randint(1, 4)))
    return "\n\n".join(parts) + "\n"


# --- what visitors write ---------------------------------------------------------------------

FIRST_NAMES = ["Anna", "Ben", "Chloé", "David", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas",
               "Kofi", "Lena", "Marco", "Nadia", "Oscar", "Priya", "Quentin", "Rosa", "Sven",
               "Tariq", "Uma", "Viktor", "Wen", "Yara", "Zoe"]
COMPANIES = ["Acme", "Brightline", "Cobalt Labs", "Dunmore", "Everfield", "Foxglove", "Gridworks",
             "Harbor & Co", "Ironleaf", "Juniper Health", "Kestrel", "Larchmont", "Meridian",
             "Northpass", "Orchard Foods", "Pinecrest", "Quarry Media", "Riverbend", "Saltmarsh",
             "Tidewater", "Umbra", "Vantage Print", "Westgate", "Yellowfin", "Zephyr Travel"]
DEPARTMENTS = ["support", "sales", "customer success", "operations", "marketing", "IT", "finance"]

# A visitor's conversation, as test_chat_turn_bench.py's six messages were (a greeting, the
# price, the timeline, the role, a meeting, integrations): the same kinds, never the same text.
_CONVERSATION = [
    ["Hi, I'm looking at tools for the {dept} team at {company}, about {n} {unit}.",
     "Hello there! Just browsing for {company}'s {dept} people, we use {integration} today.",
     "Hey, we found you on a comparison site for {dept} software for {n} {unit}."],
    ["How much does it cost for {n} {unit}?", "What would {n} {unit} on the {plan} plan cost us?",
     "Is there a discount if we pay for {n} {unit} a year up front?"],
    ["We need it live before the end of {month}, for {n} {unit} in {dept}.",
     "Our contract with {integration} ends in {month} and {company} wants to move.",
     "We would like to switch the {dept} team in {month}, is that realistic for {n} {unit}?"],
    ["I'm the {title} and I sign off on {dept} tools at {company}.",
     "I run {dept} at {company}, about {n} people.", "I'm {first}, {title} at {company}."],
    ["Can we book a demo for {day}? We are {n} {unit}.",
     "Could someone walk us through {feature} on {day}?",
     "Is a call with your team possible {day} for {company}?"],
    ["Does it work with {integration}?", "What integrations do you have besides {integration}?",
     "Can {feature} push data to {integration} for our {n} {unit}?"],
]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
_TITLES = ["CTO", "head of support", "VP of sales", "operations manager", "IT director", "COO",
           "customer success lead"]
_WHEN = ["Tuesday", "Thursday morning", "next week", "Friday afternoon", "Monday at 10",
         "early next month", "this Wednesday"]
ATTEMPTS = 1_000  # draws for a text not given yet, before the generator is found too poor


class Messages:
    """Visitors' messages, each text new to the run: ``next(number)`` is the message of turn
    ``number`` (conversations of six, as a visitor's)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.seen: set[str] = set()

    def next(self, number: int) -> str:
        templates = _CONVERSATION[number % len(_CONVERSATION)]
        for _ in range(ATTEMPTS):
            rng = self.rng
            text = rng.choice(templates).format(
                dept=rng.choice(DEPARTMENTS), company=rng.choice(COMPANIES),
                n=rng.randint(3, 400), unit=rng.choice(["agents", "seats", "users", "people"]),
                plan=rng.choice(PLANS), month=rng.choice(_MONTHS), title=rng.choice(_TITLES),
                first=rng.choice(FIRST_NAMES), day=rng.choice(_WHEN),
                feature=rng.choice(FEATURES), integration=rng.choice(INTEGRATIONS))
            if text not in self.seen:
                self.seen.add(text)
                return text
        raise RuntimeError(f"no new message of kind {number % len(_CONVERSATION)} left")


_QUESTIONS = [
    "Does the {plan} plan include {feature}?", "How does {feature} work with {integration}?",
    "Where do you store {data}?", "How long do you keep {data}?",
    "How many {unit} can we have on the {plan} plan?", "Can an {role} turn off {feature}?",
    "What does {feature} cost on {plan}?", "Is {feature} available in German?",
    "How often does {integration} sync?", "Can we export {data} from {section}?",
]


class Questions:
    """Visitors' questions about the knowledge base, each text new to the run."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.seen: set[str] = set()

    def next(self) -> str:
        for _ in range(ATTEMPTS):
            rng = self.rng
            text = rng.choice(_QUESTIONS).format(
                plan=rng.choice(PLANS), feature=rng.choice(FEATURES),
                integration=rng.choice(INTEGRATIONS), data=rng.choice(DATA),
                unit=rng.choice(UNITS), role=rng.choice(ROLES), section=rng.choice(SECTIONS))
            # A visitor's own words around it: the same question is rarely typed twice alike.
            text = rng.choice(["", "Quick question: ", "Hi! ", "We're comparing tools. ",
                               f"{rng.choice(FIRST_NAMES)} here. ", "Sorry if this is obvious: "]
                              ) + text + rng.choice(["", " Thanks!", " We are a team of "
                                                     f"{rng.randint(3, 400)}.", " Asking for "
                                                     f"{rng.choice(COMPANIES)}."])
            if text not in self.seen:
                self.seen.add(text)
                return text
        raise RuntimeError("no new question left")


# --- a stored knowledge base of any size ------------------------------------------------------

CHUNKS_PER_DOCUMENT = 1_000  # the documents of a large tenant (the limit is 5,000 a document)
POOL = 4_000  # sentences embedded for real; a chunk's vector is the sum of its sentences'


class SentencePool:
    """Generated sentences and their real embeddings (``core.embeddings``), made once."""

    def __init__(self, seed: int = 27, size: int = POOL):
        rng = random.Random(seed)
        texts: dict[str, None] = {}
        while len(texts) < size:
            texts[sentence(rng)] = None
        self.texts = list(texts)
        started = time.perf_counter()
        self.vectors = embeddings.encode(self.texts)
        self.seconds = time.perf_counter() - started

    def chunk(self, rng: random.Random) -> tuple[str, str, np.ndarray]:
        """A chunk of five to eight of the pool's sentences (600 to 1,000 characters, as the
        chunker makes them from long text): its heading, its text, its vector."""
        rows = rng.sample(range(len(self.texts)), rng.randint(5, 8))
        vector = self.vectors[rows].sum(axis=0)
        return heading(rng), " ".join(self.texts[row] for row in rows), vector / np.linalg.norm(vector)


def stored_tenant(name: str, chunks: int) -> Tenant | None:
    """The tenant ``name`` if an earlier run stored its ``chunks`` chunks, each with a vector of
    the current model; else None (and any partial one deleted)."""
    tenant = Tenant.objects.filter(name=name).first()
    if tenant is None:
        return None
    if (Chunk.objects.filter(tenant=tenant, livemode=True).count() == chunks
            and ChunkVector.objects.filter(tenant=tenant, livemode=True,
                                           model_id=embeddings.MODEL_ID).count() == chunks):
        return tenant
    tenant.delete()
    return None


def seed_tenant(name: str, chunks: int, pool: SentencePool, *, seed: int) -> Tenant:
    """A tenant on the enterprise plan whose live knowledge base holds ``chunks`` chunks, in
    ready documents of at most ``CHUNKS_PER_DOCUMENT``."""
    rng = random.Random(seed)
    tenant, _ = tenant_create(name=name, plan="enterprise", agent_provider="builtin")
    config = index.search_config("en")
    for start in range(0, chunks, CHUNKS_PER_DOCUMENT):
        made = [pool.chunk(rng) for _ in range(min(CHUNKS_PER_DOCUMENT, chunks - start))]
        with transaction.atomic():
            document = Document.objects.create(
                tenant=tenant, livemode=True,
                title=f"{PRODUCT} handbook, part {start // CHUNKS_PER_DOCUMENT + 1}",
                type="markdown", status=DocumentStatus.READY, language="en", search_config=config,
                chunk_count=len(made), character_count=sum(len(text) for _, text, _ in made))
            index.store_chunks(document_id=document.pk, tenant_id=tenant.pk, livemode=True,
                               config=config,
                               chunks=[ChunkText(position=i, heading=h, text=t)
                                       for i, (h, t, _) in enumerate(made)])
            vectors.store_vectors(document_id=document.pk, tenant_id=tenant.pk, livemode=True,
                                  vectors={embeddings.MODEL_ID: [v for _, _, v in made]})
    return tenant


def vacuum() -> None:
    """Statistics and visibility, as autovacuum would have them by the time visitors ask."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table in ("knowledge_chunk", "knowledge_termfrequency", "knowledge_document",
                      "knowledge_chunkvector", "knowledge_vectorset"):
            cursor.execute(f"VACUUM ANALYZE {table}")
