"""HubSpot, through its public REST API: CRM v3 objects (contacts, notes, meetings), the contact
search, and OAuth v1 (token, access-token info, refresh-token revoke). The requests go through
the shared SSRF-checked client (``integrations.http``), not ``hubspot-api-client``: see
docs/decisions.md, "HubSpot without its Python client".

Scopes: ``crm.objects.contacts.read`` and ``crm.objects.contacts.write`` (notes and meetings
associated with contacts need no more), ``crm.objects.owners.read`` (the owners' emails, for
owner-aware routing), plus ``oauth`` for an OAuth app.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.utils import timezone

from .. import http
from . import ChangedPage, Connector, MeetingFacts, RemoteContact, Tokens, register

# HubSpot-defined association types (CRM v4 associations reference).
NOTE_TO_CONTACT = 202
MEETING_TO_CONTACT = 200
ACCESS_SECONDS = 1800  # an access token's life when the answer does not say (HubSpot's 30 min)
# The search index follows writes by a few seconds (HubSpot's search guide): each read starts
# this much before the cursor, so a contact indexed after a newer one is still read.
SEARCH_LAG_MS = 60_000
_EXISTING_ID = re.compile(r"Existing ID:\s*(\d+)")


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@register
class HubSpot(Connector):
    provider = "hubspot"
    label = "HubSpot"
    scopes = ("crm.objects.contacts.read", "crm.objects.contacts.write",
              "crm.objects.owners.read")
    oauth_scopes = ("oauth", *scopes)
    # Lead field -> contact property. ``name`` is split into firstname and lastname; score,
    # source and tags have no HubSpot default property: map them to custom properties.
    default_field_mapping = {"name": "firstname+lastname", "company": "company",
                             "title": "jobtitle", "phone": "phone"}
    # Stored lead status -> contact properties (lifecycle stage, lead status).
    default_status_mapping = {
        "new": {"lifecyclestage": "lead", "hs_lead_status": "NEW"},
        "qualifying": {"lifecyclestage": "lead", "hs_lead_status": "IN_PROGRESS"},
        "qualified": {"lifecyclestage": "salesqualifiedlead", "hs_lead_status": "OPEN"},
        "booked": {"lifecyclestage": "salesqualifiedlead", "hs_lead_status": "OPEN_DEAL"},
        "contacted": {"lifecyclestage": "lead", "hs_lead_status": "CONNECTED"},
        "nurturing": {"lifecyclestage": "lead", "hs_lead_status": "BAD_TIMING"},
        "converted": {"lifecyclestage": "customer"},
        "lost": {"lifecyclestage": "other", "hs_lead_status": "UNQUALIFIED"},
    }

    def _url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return http.request(method, self._url(path), token=self.token, **kwargs).data

    # --- connecting -------------------------------------------------------------------------

    @classmethod
    def configured_base_url(cls) -> str:
        return settings.HUBSPOT_API_BASE_URL

    @classmethod
    def oauth_configured(cls) -> bool:
        return bool(settings.HUBSPOT_CLIENT_ID and settings.HUBSPOT_CLIENT_SECRET)

    def verify(self) -> str:
        self._call("GET", "/crm/v3/objects/contacts", query={"limit": "1"})
        return ""

    @classmethod
    def authorize_url(cls, *, state: str, redirect_uri: str) -> str:
        query = urlencode({"client_id": settings.HUBSPOT_CLIENT_ID, "redirect_uri": redirect_uri,
                           "scope": " ".join(cls.oauth_scopes), "state": state})
        return f"{settings.HUBSPOT_AUTHORIZE_URL}?{query}"

    def _token(self, form: dict[str, str]) -> Tokens:
        form = {**form, "client_id": settings.HUBSPOT_CLIENT_ID,
                "client_secret": settings.HUBSPOT_CLIENT_SECRET}
        data = http.request("POST", self._url("/oauth/v1/token"), form=form).data or {}
        access = str(data.get("access_token") or "")
        if not access:
            raise http.Refused("HubSpot's token answer has no access_token.")
        # The access token's own record: the hub (account) id and the scopes granted.
        info = http.request("GET", self._url(f"/oauth/v1/access-tokens/{quote(access, safe='')}")
                            ).data or {}
        expires_in = int(data.get("expires_in") or ACCESS_SECONDS)
        return Tokens(access_token=access,
                      refresh_token=str(data.get("refresh_token") or form.get("refresh_token", "")),
                      expires_at=timezone.now() + timedelta(seconds=expires_in),
                      scopes=[str(s) for s in info.get("scopes") or []],
                      account_id=str(info.get("hub_id") or ""))

    def exchange_code(self, *, code: str, redirect_uri: str) -> Tokens:
        return self._token({"grant_type": "authorization_code", "code": code,
                            "redirect_uri": redirect_uri})

    def refresh(self, *, refresh_token: str) -> Tokens:
        return self._token({"grant_type": "refresh_token", "refresh_token": refresh_token})

    def revoke(self, *, refresh_token: str) -> None:
        if refresh_token:
            http.request("DELETE", self._url(f"/oauth/v1/refresh-tokens/"
                                             f"{quote(refresh_token, safe='')}"))

    # --- what goes out ----------------------------------------------------------------------

    def upsert_contact(self, *, remote_id: str, email: str, properties: dict[str, Any]) -> str:
        properties = {**properties, "email": email}
        if remote_id and self._patch("contacts", remote_id, properties):
            return remote_id
        found = self._call("POST", "/crm/v3/objects/contacts/search", json_body={
            "filterGroups": [{"filters": [{"propertyName": "email", "operator": "EQ",
                                           "value": email}]}],
            "properties": ["email"], "limit": 1})
        results = (found or {}).get("results") or []
        if results:
            contact_id = str(results[0]["id"])
            self._patch("contacts", contact_id, properties)
            return contact_id
        try:
            created = self._call("POST", "/crm/v3/objects/contacts",
                                 json_body={"properties": properties})
        except http.Refused as exc:
            # Created meanwhile (by another sync or a HubSpot form): 409 names the existing id.
            existing = _EXISTING_ID.search(exc.message) if exc.status_code == 409 else None
            if existing is None:
                raise
            self._patch("contacts", existing.group(1), properties)
            return existing.group(1)
        return str(created["id"])

    def set_status(self, *, remote_id: str, properties: dict[str, str]) -> None:
        if properties:
            self._call("PATCH", f"/crm/v3/objects/contacts/{quote(remote_id)}",
                       json_body={"properties": properties})

    def upsert_note(self, *, remote_id: str, contact_id: str, body: str,
                    timestamp: datetime) -> str:
        properties = {"hs_timestamp": _iso(timestamp), "hs_note_body": body[:65536]}
        return self._upsert_engagement("notes", remote_id, properties, contact_id, NOTE_TO_CONTACT)

    def upsert_meeting(self, *, remote_id: str, contact_id: str, meeting: MeetingFacts) -> str:
        outcome = ("CANCELED" if meeting.cancelled else
                   "RESCHEDULED" if meeting.rescheduled else "SCHEDULED")
        properties = {"hs_timestamp": _iso(meeting.starts_at), "hs_meeting_title": meeting.title,
                      "hs_meeting_body": meeting.body,
                      "hs_meeting_start_time": _iso(meeting.starts_at),
                      "hs_meeting_end_time": _iso(meeting.ends_at),
                      "hs_meeting_outcome": outcome}
        return self._upsert_engagement("meetings", remote_id, properties, contact_id,
                                       MEETING_TO_CONTACT)

    def _upsert_engagement(self, objects: str, remote_id: str, properties: dict[str, str],
                           contact_id: str, association: int) -> str:
        if remote_id and self._patch(objects, remote_id, properties):
            return remote_id
        created = self._call("POST", f"/crm/v3/objects/{objects}", json_body={
            "properties": properties,
            "associations": [{"to": {"id": contact_id},
                              "types": [{"associationCategory": "HUBSPOT_DEFINED",
                                         "associationTypeId": association}]}]})
        return str(created["id"])

    def _patch(self, objects: str, remote_id: str, properties: dict[str, Any]) -> bool:
        """Updates the object; False when HubSpot no longer has it (deleted there: 404)."""
        try:
            self._call("PATCH", f"/crm/v3/objects/{objects}/{quote(remote_id)}",
                       json_body={"properties": properties})
        except http.Refused as exc:
            if exc.status_code == 404:
                return False
            raise
        return True

    # --- what comes back --------------------------------------------------------------------

    @staticmethod
    def cursor_at(moment: datetime) -> str:
        return str(int(moment.timestamp() * 1000))  # lastmodifieddate's epoch milliseconds

    def changed_contacts(self, *, since: str, after: str, properties: list[str],
                         limit: int) -> ChangedPage:
        """The CRM search, ``lastmodifieddate`` GTE the cursor less ``SEARCH_LAG_MS`` (epoch
        ms; GTE, not GT, so a contact changed in the same millisecond as the last one read is
        not missed; the margin, for a change the search indexes after a newer one: reading a
        contact twice changes nothing), oldest change first, ``after`` paging."""
        start = max(0, int(since or 0) - SEARCH_LAG_MS)
        body: dict[str, Any] = {
            "filterGroups": [{"filters": [{"propertyName": "lastmodifieddate", "operator": "GTE",
                                           "value": str(start)}]}],
            "sorts": [{"propertyName": "lastmodifieddate", "direction": "ASCENDING"}],
            "properties": sorted({"email", "hubspot_owner_id", "lastmodifieddate",
                                  *properties}),
            "limit": limit}
        if after:
            body["after"] = after
        found = self._call("POST", "/crm/v3/objects/contacts/search", json_body=body) or {}
        contacts = []
        for row in found.get("results") or []:
            props = row.get("properties") or {}
            contacts.append(RemoteContact(
                remote_id=str(row["id"]), email=str(props.get("email") or ""),
                properties={k: str(props.get(k) or "") for k in properties},
                owner_id=str(props.get("hubspot_owner_id") or ""),
                modified=_epoch_ms(props.get("lastmodifieddate") or row.get("updatedAt"))))
        following = (((found.get("paging") or {}).get("next") or {}).get("after")) or ""
        return ChangedPage(contacts=contacts, after=str(following))

    def owner_emails(self) -> dict[str, str]:
        emails: dict[str, str] = {}
        after = ""
        for _ in range(100):  # 100 pages of 100 owners: more than any portal has
            query = {"limit": "100", **({"after": after} if after else {})}
            page = self._call("GET", "/crm/v3/owners/", query=query) or {}
            for owner in page.get("results") or []:
                if owner.get("email"):
                    emails[str(owner["id"])] = str(owner["email"]).lower()
            after = (((page.get("paging") or {}).get("next") or {}).get("after")) or ""
            if not after:
                break
        return emails


def _epoch_ms(value: Any) -> str:
    """HubSpot's datetime property (ISO 8601, or epoch ms in older answers) as epoch ms."""
    text = str(value or "")
    if not text or text.isdigit():
        return text
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return str(int(moment.timestamp() * 1000))
