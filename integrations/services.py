"""Every write of the integrations app: connecting a CRM (a private token or OAuth 2.0),
disconnecting it (the grant revoked at the CRM), and the sync of each lead, conversation and
meeting to it: planned by an event subscriber after commit, sent by a task, retried with backoff
in the shape of the webhook deliveries (core.work; docs/integrations.md, "The sync log")."""

from __future__ import annotations

import contextlib
import html
import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from conversations.models import Conversation, Meeting, MeetingStatus
from core import broker, crypto, outbound
from core.errors import FieldError, InvalidRequest
from core.work import Backoff
from leads.models import Lead
from leads.services import lead_update
from leads.vocabulary import LeadStatus
from tenants.models import Tenant, User

from . import http
from .connectors import Connector, MeetingFacts, RemoteContact, Tokens, connector_class
from .models import (
    AuthKind,
    BackfillStatus,
    ConnectionStatus,
    CrmConnection,
    CrmSync,
    Provider,
    SyncKind,
    SyncStatus,
)

logger = logging.getLogger("salesagent.integrations")

# Shorter than the webhooks' first steps (a CRM blip should not hold a lead back for a minute),
# as long in total (a CRM down for a night loses nothing): eight attempts over about 39 hours.
SCHEDULE = Backoff((timedelta(seconds=10), timedelta(minutes=1), timedelta(minutes=5),
                    timedelta(minutes=30), timedelta(hours=2), timedelta(hours=12),
                    timedelta(hours=24)))
LEASE = timedelta(seconds=60)
REQUEUE_AFTER = timedelta(seconds=60)
SWEEP_BATCH = 500
REFRESH_MARGIN = timedelta(minutes=5)  # an OAuth access token is refreshed this long before
TRANSCRIPT_MESSAGES = 200
# A change that comes with every chat turn (a message, a new score) waits this long for the next
# ones, so that a conversation is a request to the CRM every half minute at most, not several a
# turn. The sweeper sends it once due.
GATHER = timedelta(seconds=30)


def _connector(connection: CrmConnection, token: str | None = None) -> Connector:
    cls = connector_class(connection.provider)
    return cls(base_url=connection.base_url, token=connection.access_token if token is None
               else token)


def _provider(provider: str) -> type[Connector]:
    if provider not in Provider.values:
        raise InvalidRequest(details=[FieldError("provider", "invalid_enum",
                                                 "One of " + ", ".join(Provider.values) + ".")])
    return connector_class(provider)


def _base_url(cls: type[Connector], base_url: str | None) -> str:
    url = (base_url or "").strip() or cls.configured_base_url()
    try:
        outbound.check_target(url, policy=http.POLICY)
    except outbound.TargetRefused as exc:
        raise InvalidRequest("The CRM's API URL may not be used.",
                             details=[FieldError("base_url", exc.code, exc.message)]) from None
    return url.rstrip("/")


# --- connecting -----------------------------------------------------------------------------

def crm_connect_token(*, tenant: Tenant, livemode: bool, provider: str, token: str,
                      base_url: str | None = None) -> CrmConnection:
    """Connects a CRM with a private app's token, verified at once with one read: a token the
    CRM refuses changes nothing."""
    cls = _provider(provider)
    token = (token or "").strip()
    if not token:
        raise InvalidRequest(details=[FieldError("token", "required", "A token is required.")])
    url = _base_url(cls, base_url)
    try:
        account_id = cls(base_url=url, token=token).verify()
    except http.CrmError as exc:
        raise InvalidRequest(f"{cls.label} refused the token.",
                             details=[FieldError("token", "invalid", exc.message)]) from None
    tokens = Tokens(access_token=token, refresh_token="", expires_at=None,
                    scopes=list(cls.scopes), account_id=account_id)
    return _save(tenant=tenant, livemode=livemode, cls=cls, url=url, kind=AuthKind.TOKEN,
                 tokens=tokens)


def crm_connect_oauth(*, tenant: Tenant, livemode: bool, provider: str, code: str,
                      redirect_uri: str, base_url: str | None = None) -> CrmConnection:
    """Connects a CRM with the code of its OAuth 2.0 authorization (the dashboard's callback)."""
    cls = _provider(provider)
    url = _base_url(cls, base_url)
    try:
        tokens = cls(base_url=url, token="").exchange_code(code=code, redirect_uri=redirect_uri)
    except http.CrmError as exc:
        raise InvalidRequest(f"{cls.label} refused the authorization.",
                             details=[FieldError("code", "invalid", exc.message)]) from None
    return _save(tenant=tenant, livemode=livemode, cls=cls, url=url, kind=AuthKind.OAUTH,
                 tokens=tokens)


def _save(*, tenant: Tenant, livemode: bool, cls: type[Connector], url: str, kind: str,
          tokens: Tokens) -> CrmConnection:
    now = timezone.now()
    with transaction.atomic():
        connection, _ = CrmConnection.objects.select_for_update().get_or_create(
            tenant=tenant, livemode=livemode, provider=cls.provider,
            defaults={"auth_kind": kind, "base_url": url})
        connection.auth_kind, connection.base_url = kind, url
        connection.status = ConnectionStatus.CONNECTED
        connection.access_token_encrypted = crypto.encrypt(tokens.access_token)
        connection.refresh_token_encrypted = crypto.encrypt(tokens.refresh_token)
        connection.expires_at, connection.scopes = tokens.expires_at, tokens.scopes
        connection.account_id = tokens.account_id
        connection.field_mapping = connection.field_mapping or dict(cls.default_field_mapping)
        connection.status_mapping = connection.status_mapping or {
            k: dict(v) for k, v in cls.default_status_mapping.items()}
        connection.last_error, connection.connected_at, connection.updated_at = "", now, now
        connection.save()
        # What waited for the reconnect goes now.
        waiting = list(connection.syncs.filter(status=SyncStatus.WAITING)
                       .values_list("pk", flat=True))
        CrmSync.objects.filter(pk__in=waiting).update(
            status=SyncStatus.PENDING, attempts=0, next_attempt_at=now, updated_at=now)
        transaction.on_commit(lambda: enqueue(waiting))
        if not connection.backfill_status:  # the first connect: the existing leads go too
            crm_backfill_start(connection=connection)
    return connection


def crm_disconnect(*, connection: CrmConnection) -> CrmConnection:
    """Revokes the grant at the CRM (OAuth; a CRM that cannot be reached does not keep the
    connection: the failure is kept on the row), wipes the tokens, and ends the syncs not sent
    yet. The row and its sync log stay."""
    if connection.status == ConnectionStatus.DISCONNECTED:
        return connection
    error = ""
    if connection.auth_kind == AuthKind.OAUTH and connection.refresh_token:
        try:
            _connector(connection).revoke(refresh_token=connection.refresh_token)
        except http.CrmError as exc:
            error = f"Revoking at the CRM failed: {exc.message}"
    now = timezone.now()
    with transaction.atomic():
        CrmConnection.objects.filter(pk=connection.pk).update(
            status=ConnectionStatus.DISCONNECTED, access_token_encrypted="",
            refresh_token_encrypted="", expires_at=None, last_error=error[:500], updated_at=now)
        connection.syncs.filter(status__in=[SyncStatus.PENDING, SyncStatus.WAITING]).update(
            status=SyncStatus.FAILED, next_attempt_at=None, updated_at=now,
            last_error="Not sent: the CRM was disconnected.")
    connection.refresh_from_db()
    return connection


def _fresh_token(connection: CrmConnection, *, now: datetime, force: bool = False) -> str:
    """The access token to send, refreshed first when it expires within ``REFRESH_MARGIN`` (or
    when ``force``: the CRM just refused it). Raises AuthRefused when it cannot be refreshed."""
    if connection.auth_kind != AuthKind.OAUTH:
        if force:
            raise http.AuthRefused("The CRM refused the token.")
        return connection.access_token
    if not force and connection.expires_at and connection.expires_at - now > REFRESH_MARGIN:
        return connection.access_token
    try:
        tokens = _connector(connection, "").refresh(refresh_token=connection.refresh_token)
    except (http.Refused, http.AuthRefused) as exc:
        raise http.AuthRefused(f"Refreshing the access token failed: {exc.message}",
                               status_code=exc.status_code) from None
    CrmConnection.objects.filter(pk=connection.pk).update(
        access_token_encrypted=crypto.encrypt(tokens.access_token),
        refresh_token_encrypted=crypto.encrypt(tokens.refresh_token),
        expires_at=tokens.expires_at, updated_at=now)
    connection.refresh_from_db()
    return tokens.access_token


def _needs_reconnect(connection: CrmConnection, *, error: str, now: datetime) -> None:
    """The CRM refused the token for good: every sync of the connection waits for a reconnect
    instead of spending its schedule."""
    with transaction.atomic():
        CrmConnection.objects.filter(pk=connection.pk, status=ConnectionStatus.CONNECTED).update(
            status=ConnectionStatus.NEEDS_RECONNECT, last_error=error[:500], updated_at=now)
        connection.syncs.filter(status=SyncStatus.PENDING, claim_token__isnull=True).update(
            status=SyncStatus.WAITING, next_attempt_at=None, updated_at=now)


# --- planning (the event subscribers) -------------------------------------------------------

def crm_sync_plan(*, tenant_id: Any, livemode: bool, kind: str, object_id: Any, lead_id: Any,
                  trigger: str, except_provider: str | None = None, only: Any = None,
                  gather: bool = False) -> list[Any]:
    """Arms the sync of one object to each CRM the tenant has connected in this mode (a change
    of an object already synced re-arms its row: same CRM id, a new generation). Returns the
    rows to enqueue.

    ``gather``: a change that comes with every turn (``GATHER``). A row already pending keeps
    its time (the change joins what it will send); another is due ``GATHER`` from now, left to
    the sweeper, and not returned."""
    now = timezone.now()
    armed = []
    connections = CrmConnection.objects.filter(
        tenant_id=tenant_id, livemode=livemode,
        status__in=[ConnectionStatus.CONNECTED, ConnectionStatus.NEEDS_RECONNECT])
    if except_provider:
        connections = connections.exclude(provider=except_provider)
    if only is not None:
        connections = connections.filter(pk=only)
    for connection in connections:
        status = (SyncStatus.PENDING if connection.status == ConnectionStatus.CONNECTED
                  else SyncStatus.WAITING)
        changes = {"status": status, "generation": F("generation") + 1, "attempts": 0,
                   "next_attempt_at": now if status == SyncStatus.PENDING else None,
                   "trigger": trigger, "last_error": "", "updated_at": now}
        later = status == SyncStatus.PENDING and gather
        if later:
            changes["next_attempt_at"] = Case(
                When(status=SyncStatus.PENDING, next_attempt_at__isnull=False,
                     then=F("next_attempt_at")), default=Value(now + GATHER))
            changes["enqueued_at"] = None  # the sweeper's, once due
        rows = CrmSync.objects.filter(connection=connection, kind=kind, object_id=object_id)
        if not rows.update(**changes):
            try:
                with transaction.atomic():
                    CrmSync.objects.create(
                        connection=connection, tenant_id=tenant_id, livemode=livemode, kind=kind,
                        object_id=object_id, lead_id=lead_id, status=status, trigger=trigger,
                        next_attempt_at=now if status == SyncStatus.PENDING else None,
                        created_at=now, updated_at=now)
            except IntegrityError:  # armed at the same moment by another process
                rows.update(**changes)
            else:
                later = False  # a first sync goes at once: the record must exist in the CRM
        if status == SyncStatus.PENDING and not later:
            armed += list(rows.values_list("pk", flat=True))
    return armed


def crm_sync_retry(*, sync: CrmSync) -> CrmSync:
    """The dashboard's "Try again": a failed sync starts a new schedule."""
    now = timezone.now()
    if sync.connection.status != ConnectionStatus.CONNECTED:
        raise InvalidRequest("Connect the CRM again first.")
    CrmSync.objects.filter(pk=sync.pk, status=SyncStatus.FAILED).update(
        status=SyncStatus.PENDING, attempts=0, next_attempt_at=now, updated_at=now)
    transaction.on_commit(lambda: enqueue([sync.pk]))
    sync.refresh_from_db()
    return sync


def enqueue(sync_ids: Iterable[Any]) -> None:
    """One sync task per row (``core.broker.publish``). A broker that cannot be reached loses
    nothing: the rows stay due for the sweeper."""
    from .tasks import sync as sync_task

    ids = [str(i) for i in sync_ids]
    if not ids:
        return
    CrmSync.objects.filter(pk__in=ids).update(enqueued_at=timezone.now())
    if not broker.publish(sync_task, ids):
        CrmSync.objects.filter(pk__in=ids, status=SyncStatus.PENDING).update(enqueued_at=None)


def crm_syncs_sweep(*, now: datetime | None = None, batch: int = SWEEP_BATCH) -> int:
    """Run by beat: enqueues the due syncs that no task is known to carry (a lost message, a
    worker killed mid-attempt once its lease expired). Safe to run twice."""
    now = now or timezone.now()
    ids = list(CrmSync.due(now=now, requeue_after=REQUEUE_AFTER).values_list("pk", flat=True)
               [:batch])
    with contextlib.suppress(Exception):
        enqueue(ids)
    return len(ids)


# --- one attempt ----------------------------------------------------------------------------

class _Gone(Exception):
    """The object to sync no longer exists here."""


def crm_sync_attempt(*, sync_id: Any, now: datetime | None = None) -> CrmSync | None:
    """Sends one due sync to its CRM and records how it went; None when there was nothing to do
    (not due, or another worker has it). ``now`` is the schedule's clock (tests move it)."""
    now = now or timezone.now()
    token = CrmSync.claim(sync_id, now=now, lease=LEASE + timedelta(
        seconds=6 * http.timeout_seconds()))
    if token is None:
        return None
    sync = CrmSync.objects.select_related("connection").get(pk=sync_id)
    connection = sync.connection
    if connection.status == ConnectionStatus.NEEDS_RECONNECT:
        return _settle(sync, token, now, {"status": SyncStatus.WAITING, "next_attempt_at": None})
    if connection.status != ConnectionStatus.CONNECTED:
        return _settle(sync, token, now, {"status": SyncStatus.FAILED, "next_attempt_at": None,
                                          "last_error": "Not sent: the CRM was disconnected."})
    try:
        changes = _send(sync, connection, now=now)
    except _Gone as exc:
        changes = {"status": SyncStatus.FAILED, "next_attempt_at": None, "last_error": str(exc)}
    except http.AuthRefused as exc:
        _needs_reconnect(connection, error=exc.message, now=now)
        changes = {"status": SyncStatus.WAITING, "next_attempt_at": None,
                   "last_error": exc.message, "last_status_code": exc.status_code}
    except http.RateLimited as exc:
        # Waited out, not counted: a burst of 429s must not spend the schedule.
        changes = {"next_attempt_at": now + timedelta(seconds=exc.retry_after),
                   "attempts": max(sync.attempts - 1, 0), "last_error": exc.message,
                   "last_status_code": 429}
    except http.Transient as exc:
        changes = {**CrmSync.failure(SCHEDULE, attempts=sync.attempts, now=now,
                                     failed=SyncStatus.FAILED),
                   "last_error": exc.message, "last_status_code": exc.status_code}
    except http.Refused as exc:
        changes = {"status": SyncStatus.FAILED, "next_attempt_at": None,
                   "last_error": exc.message, "last_status_code": exc.status_code}
    return _settle(sync, token, now, changes)


def _settle(sync: CrmSync, token: Any, now: datetime, changes: dict[str, Any]
            ) -> CrmSync | None:
    changes = {"last_error": "", "updated_at": now, **changes}
    if changes.get("status") in (SyncStatus.SYNCED, SyncStatus.FAILED):
        # Settled for good only if no change came while on the wire; else once more, at once
        # (a newer change may succeed where this one was refused).
        done = CrmSync.objects.filter(pk=sync.pk, claim_token=token,
                                      generation=sync.generation)
        if done.update(claim_token=None, lease_expires_at=None, enqueued_at=None, **changes):
            sync.refresh_from_db()
            return sync
        changes.update(status=SyncStatus.PENDING, next_attempt_at=now, attempts=0, last_error="")
        if CrmSync.settle(sync.pk, token, changes):
            transaction.on_commit(lambda: enqueue([sync.pk]))
    elif not CrmSync.settle(sync.pk, token, changes):
        logger.warning("CRM sync %s: result dropped, the claim is gone", sync.pk)
        return None
    if changes.get("last_error"):
        logger.warning("CRM sync %s (%s) failed (attempt %s): %s", sync.pk, sync.kind,
                       sync.attempts, changes["last_error"])
    sync.refresh_from_db()
    return sync


def _send(sync: CrmSync, connection: CrmConnection, *, now: datetime) -> dict[str, Any]:
    """The requests of one attempt, with one refresh and retry on a 401 (OAuth)."""
    token = _fresh_token(connection, now=now)
    try:
        return _send_with(sync, connection, _connector(connection, token), now=now)
    except http.AuthRefused:
        if connection.auth_kind != AuthKind.OAUTH:
            raise
    token = _fresh_token(connection, now=now, force=True)
    return _send_with(sync, connection, _connector(connection, token), now=now)


def _send_with(sync: CrmSync, connection: CrmConnection, crm: Connector, *, now: datetime
               ) -> dict[str, Any]:
    synced: dict[str, Any] = {"status": SyncStatus.SYNCED, "next_attempt_at": None,
                              "synced_at": now, "last_status_code": 200}
    if sync.kind == SyncKind.CONTACT:
        lead = Lead.objects.filter(pk=sync.object_id, tenant_id=sync.tenant_id,
                                   livemode=sync.livemode).first()
        if lead is None:
            raise _Gone("Not sent: the lead no longer exists.")
        remote_id = crm.upsert_contact(remote_id=sync.remote_id, email=lead.email,
                                       properties=contact_properties(connection, lead))
        if lead.status != sync.pushed_status:
            crm.set_status(remote_id=remote_id,
                           properties=connection.status_mapping.get(lead.status) or {})
        return {**synced, "remote_id": remote_id, "pushed_status": lead.status}
    if sync.kind == SyncKind.NOTE:
        conversation = (Conversation.objects.select_related("lead")
                        .filter(pk=sync.object_id, tenant_id=sync.tenant_id,
                                livemode=sync.livemode).first())
        if conversation is None or conversation.lead is None:
            raise _Gone("Not sent: the conversation (or its lead) no longer exists.")
        contact_id = _contact_id(connection, crm, conversation.lead, now=now)
        remote_id = crm.upsert_note(remote_id=sync.remote_id, contact_id=contact_id,
                                    body=note_body(conversation),
                                    timestamp=conversation.created_at)
        return {**synced, "remote_id": remote_id}
    meeting = (Meeting.objects.select_related("lead", "host")
               .filter(pk=sync.object_id, tenant_id=sync.tenant_id, livemode=sync.livemode)
               .first())
    if meeting is None:
        raise _Gone("Not sent: the meeting no longer exists.")
    contact_id = _contact_id(connection, crm, meeting.lead, now=now)
    remote_id = crm.upsert_meeting(remote_id=sync.remote_id, contact_id=contact_id,
                                   meeting=meeting_facts(meeting, trigger=sync.trigger))
    return {**synced, "remote_id": remote_id}


def _contact_id(connection: CrmConnection, crm: Connector, lead: Lead, *, now: datetime) -> str:
    """The CRM id of the lead's contact: the one stored, or upserted now (by email, so never a
    duplicate) and stored on the lead's contact sync."""
    known = (CrmSync.objects.filter(connection=connection, kind=SyncKind.CONTACT,
                                    object_id=lead.pk).exclude(remote_id="")
             .values_list("remote_id", flat=True).first())
    if known:
        return known
    remote_id = crm.upsert_contact(remote_id="", email=lead.email,
                                   properties=contact_properties(connection, lead))
    rows = CrmSync.objects.filter(connection=connection, kind=SyncKind.CONTACT, object_id=lead.pk)
    if not rows.update(remote_id=remote_id):
        with contextlib.suppress(IntegrityError), transaction.atomic():
            CrmSync.objects.create(
                connection=connection, tenant_id=lead.tenant_id, livemode=lead.livemode,
                kind=SyncKind.CONTACT, object_id=lead.pk, lead=lead, remote_id=remote_id,
                status=SyncStatus.SYNCED, synced_at=now, trigger="sync", created_at=now,
                updated_at=now)
    return remote_id


# --- what is sent ---------------------------------------------------------------------------

def contact_properties(connection: CrmConnection, lead: Lead) -> dict[str, str]:
    """The lead's fields as CRM properties, by the connection's field mapping: a lead field (or
    ``custom:<key>`` of its custom fields) -> a property name; ``name`` may map to
    ``first+last`` (two properties, the name split at its first space). Blank values are not
    sent, so a field filled in the CRM is never blanked from here."""
    values: dict[str, str] = {}
    for field, target in (connection.field_mapping or {}).items():
        value = _field_value(lead, field)
        if "+" in target:
            first, last = target.split("+", 1)
            given, _, family = value.partition(" ")
            values.update({k: v for k, v in ((first, given), (last, family)) if v})
        elif value and target:
            values[target] = value
    return values


def _field_value(lead: Lead, field: str) -> str:
    if field.startswith("custom:"):
        value = (lead.custom_fields or {}).get(field.removeprefix("custom:"), "")
    elif field == "tags":
        value = ";".join(lead.tags or [])
    else:
        value = getattr(lead, field, "")
    return "" if value is None else str(value)


def note_body(conversation: Conversation) -> str:
    """The conversation's note: its summary, intents and score reasons, then the transcript
    (HubSpot shows a note's HTML)."""
    def para(title: str, text: str) -> str:
        return f"<p><strong>{html.escape(title)}</strong><br>{text}</p>" if text else ""

    messages = list(conversation.messages.order_by("sequence")
                    .values_list("role", "content")[:TRANSCRIPT_MESSAGES])
    transcript = "<br>".join(f"<em>{html.escape(role)}</em>: {html.escape(content)}"
                             for role, content in messages)
    reasons = "; ".join(str(r.get("reason", r) if isinstance(r, dict) else r)
                        for r in conversation.score_reasons or [])
    return "".join([
        f"<p>Chat with the sales agent (score {conversation.lead_score}).</p>",
        para("Summary", html.escape(conversation.summary)),
        para("Intents", html.escape(", ".join(map(str, conversation.intents or [])))),
        para("Score reasons", html.escape(reasons)),
        para("Transcript", transcript),
    ])


def meeting_facts(meeting: Meeting, *, trigger: str) -> MeetingFacts:
    lead, host = meeting.lead, meeting.host
    who = lead.name or lead.email
    lines = [f"Booked by the sales agent with {who} <{lead.email}>."]
    if host is not None:
        lines.append(f"Host: {host.display_name} <{host.email}>")
    return MeetingFacts(
        title=f"Discovery call with {who}" + (f" ({lead.company})" if lead.company else ""),
        body="\n".join(lines), starts_at=meeting.starts_at, ends_at=meeting.ends_at,
        cancelled=meeting.status == MeetingStatus.CANCELLED,
        rescheduled=trigger == "meeting.rescheduled")



# --- what comes back (CRM -> here) ----------------------------------------------------------

POLL_PAGE = 100
POLL_PAGES = 20  # per run: 2,000 changed contacts; the next run goes on from the cursor
FOLLOWED = (LeadStatus.CONVERTED, LeadStatus.LOST)  # what the CRM may say of a lead


def crm_polls_enqueue() -> int:
    """Beat: one poll task per connected CRM, and the backfills a killed worker left behind."""
    from .tasks import backfill as backfill_task
    from .tasks import poll as poll_task

    connected = CrmConnection.objects.filter(status=ConnectionStatus.CONNECTED)
    ids = [str(pk) for pk in connected.values_list("pk", flat=True)]
    stale = timezone.now() - BACKFILL_STALE
    stalled = [str(pk) for pk in connected.filter(backfill_status=BackfillStatus.RUNNING,
                                                  updated_at__lt=stale)
               .values_list("pk", flat=True)]
    broker.publish(poll_task, ids)
    broker.publish(backfill_task, stalled)
    return len(ids)


def crm_poll(*, connection_id: Any, now: datetime | None = None) -> int:
    """Reads the contacts changed in the CRM since the connection's cursor, oldest first, and
    makes each lead follow: a status the CRM's properties map to (converted, lost: the status
    mapping read backwards) and the record's owner (the rep with that email becomes the lead's
    rep). The changes go through the lead services, so ``lead.converted`` and the rest fire;
    their events say ``origin: crm:<provider>``, so nothing is sent back. The cursor moves after
    each page: a worker killed mid-run reads at most one page again (which changes nothing).
    Returns how many leads changed."""
    now = now or timezone.now()
    connection = CrmConnection.objects.filter(pk=connection_id,
                                              status=ConnectionStatus.CONNECTED).first()
    if connection is None:
        return 0
    targets = {status: props for status in FOLLOWED
               if (props := (connection.status_mapping or {}).get(status))}
    properties = sorted({name for props in targets.values() for name in props})
    # Blank before the first read: from connecting on, not the CRM's whole history (its
    # customers of years would all come back as conversions).
    since = connection.cursor or connector_class(connection.provider).cursor_at(
        connection.connected_at or now)
    newest, after, changed = since, "", 0
    owners: dict[str, str] | None = None
    try:
        crm = _connector(connection, _fresh_token(connection, now=now))
        for _ in range(POLL_PAGES):
            page = crm.changed_contacts(since=since, after=after, properties=properties,
                                        limit=POLL_PAGE)
            if owners is None and any(c.owner_id for c in page.contacts):
                try:
                    owners = crm.owner_emails()
                except http.Refused as exc:  # no owners scope (an older grant): statuses only
                    owners = {}
                    logger.warning("CRM poll of %s: owners not read: %s", connection.pk,
                                   exc.message)
            for contact in page.contacts:
                changed += _follow(connection, contact, targets, owners or {})
                if contact.modified.isdigit() and int(contact.modified) > int(newest or 0):
                    newest = contact.modified
            CrmConnection.objects.filter(pk=connection.pk).update(
                cursor=newest, polled_at=now, last_error="")
            after = page.after
            if not after:
                break
    except http.AuthRefused as exc:
        _needs_reconnect(connection, error=exc.message, now=now)
    except http.CrmError as exc:  # tried again at the next beat, from the cursor
        CrmConnection.objects.filter(pk=connection.pk).update(
            last_error=f"Reading changes failed: {exc.message}"[:500])
        logger.warning("CRM poll of %s failed: %s", connection.pk, exc.message)
    return changed


def _follow(connection: CrmConnection, contact: RemoteContact, targets: dict[str, dict],
            owners: dict[str, str]) -> int:
    row = (CrmSync.objects.select_related("lead")
           .filter(connection=connection, kind=SyncKind.CONTACT, remote_id=contact.remote_id)
           .first())
    lead = row.lead if row is not None else None
    if lead is None and contact.email:
        lead = Lead.objects.filter(tenant_id=connection.tenant_id, livemode=connection.livemode,
                                   email__iexact=contact.email).first()
    if lead is None:  # a contact that is no lead here: nothing to follow
        return 0
    changes: dict[str, Any] = {}
    status = next((s for s, props in targets.items()
                   if all(contact.properties.get(k) == str(v) for k, v in props.items())), None)
    if status is not None and lead.status != status:
        changes["status"] = status
    owner_email = owners.get(contact.owner_id, "") if contact.owner_id else ""
    if owner_email and (row is None or row.remote_owner_email != owner_email):
        rep = (User.objects.filter(tenant_id=connection.tenant_id, is_active=True,
                                   email__iexact=owner_email).values_list("pk", flat=True)
               .first())
        if rep is not None and lead.assigned_to_id != rep:
            changes["assigned_to_id"] = rep
    label = connector_class(connection.provider).label
    now = timezone.now()
    with transaction.atomic():
        if changes:
            lead_update(lead=lead, changes=changes, touch_activity=False,
                        origin=f"crm:{connection.provider}",
                        qualification_reason=(f"Marked {changes['status']} in {label}"
                                              if "status" in changes else None))
        known = {"remote_owner_email": owner_email, "remote_id": contact.remote_id}
        if "status" in changes:
            known["pushed_status"] = changes["status"]  # the CRM has it: not sent back
        rows = CrmSync.objects.filter(connection=connection, kind=SyncKind.CONTACT,
                                      object_id=lead.pk)
        if not rows.update(**known):
            with contextlib.suppress(IntegrityError), transaction.atomic():
                CrmSync.objects.create(
                    connection=connection, tenant_id=lead.tenant_id, livemode=lead.livemode,
                    kind=SyncKind.CONTACT, object_id=lead.pk, lead=lead,
                    status=SyncStatus.SYNCED, synced_at=now, trigger="crm", created_at=now,
                    updated_at=now, pushed_status=known.get("pushed_status", ""), **{
                        k: v for k, v in known.items() if k != "pushed_status"})
    return 1 if changes else 0


# --- the backfill of the leads that existed before connecting -------------------------------

BACKFILL_PAGE = 100
BACKFILL_STALE = timedelta(minutes=5)  # a running backfill not moved for this long is resumed


def crm_backfill_start(*, connection: CrmConnection) -> None:
    """Starts (or starts again) the backfill of the connection's tenant's leads of its mode."""
    total = Lead.objects.filter(tenant_id=connection.tenant_id,
                                livemode=connection.livemode).count()
    CrmConnection.objects.filter(pk=connection.pk).update(
        backfill_status=BackfillStatus.RUNNING, backfill_cursor="", backfill_done=0,
        backfill_total=total, updated_at=timezone.now())
    from .tasks import backfill as backfill_task

    transaction.on_commit(lambda: broker.publish(backfill_task, [str(connection.pk)]))


def crm_backfill_page(*, connection_id: Any, now: datetime | None = None,
                      size: int = BACKFILL_PAGE) -> bool:
    """Sends one page of leads (in id order, after the stored cursor) to the CRM, then moves the
    cursor. A lead whose contact is already synced is skipped, so a page read again after a
    worker was killed sends nothing twice, and the contact upsert (by email) never duplicates.
    A sync the CRM does not take now (429, 5xx) stays pending on its own schedule. True while
    pages remain."""
    now = now or timezone.now()
    connection = CrmConnection.objects.filter(pk=connection_id).first()
    if (connection is None or connection.status != ConnectionStatus.CONNECTED
            or connection.backfill_status != BackfillStatus.RUNNING):
        return False
    leads = Lead.objects.filter(tenant_id=connection.tenant_id, livemode=connection.livemode)
    if connection.backfill_cursor:
        leads = leads.filter(pk__gt=connection.backfill_cursor)
    page = list(leads.order_by("pk").values_list("pk", flat=True)[:size])
    if not page:
        CrmConnection.objects.filter(pk=connection.pk).update(
            backfill_status=BackfillStatus.DONE, updated_at=now)
        return False
    synced = set(CrmSync.objects.filter(connection=connection, kind=SyncKind.CONTACT,
                                        object_id__in=page, status=SyncStatus.SYNCED)
                 .exclude(remote_id="").values_list("object_id", flat=True))
    for lead_id in page:
        if lead_id in synced:
            continue
        for sync_id in crm_sync_plan(tenant_id=connection.tenant_id,
                                     livemode=connection.livemode, kind=SyncKind.CONTACT,
                                     object_id=lead_id, lead_id=lead_id, trigger="backfill",
                                     only=connection.pk):
            crm_sync_attempt(sync_id=sync_id)
    CrmConnection.objects.filter(pk=connection.pk).update(
        backfill_cursor=str(page[-1]), backfill_done=F("backfill_done") + len(page),
        updated_at=timezone.now())
    return True
