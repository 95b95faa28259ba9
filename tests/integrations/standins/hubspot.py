"""A strict stand-in for the parts of HubSpot's public API that the HubSpot connector uses,
served over real HTTP on 127.0.0.1 by the tests (HubSpot's servers cannot be reached from here).

Written from HubSpot's public API reference, CRM API v3 and OAuth v1:
- Contacts v3: developers.hubspot.com/docs/api-reference/crm-contacts-v3/guide
  (POST/PATCH /crm/v3/objects/contacts, GET list, 409 "Contact already exists. Existing ID: N")
- Search v3: developers.hubspot.com/docs/api-reference/search/guide
  (POST /crm/v3/objects/contacts/search: filterGroups/filters, operator EQ, limit <= 200)
- Notes v3: developers.hubspot.com/docs/api-reference/crm-notes-v3/guide (hs_timestamp
  required, hs_note_body; association type 202 note -> contact, HUBSPOT_DEFINED)
- Meetings v3: developers.hubspot.com/docs/api-reference/crm-meetings-v3/guide (hs_timestamp,
  hs_meeting_*; outcome SCHEDULED, COMPLETED, RESCHEDULED, NO_SHOW, CANCELED; type 200)
- Search v3 for reading changes back: the same guide, "Filter search results" (operators GT,
  GTE, LT, LTE, EQ on ``lastmodifieddate`` given in epoch milliseconds), "Sort search
  results" (one sort, ASCENDING/DESCENDING), "Paginate through results" (``after``, answered
  in ``paging.next.after``; ``limit`` <= 200; 10,000 results at most per query); the answer
  holds the requested properties plus ``createdate``, ``hs_object_id``, ``lastmodifieddate``
- Owners v3: developers.hubspot.com/docs/api-reference/crm-owners-v3/guide
  (GET /crm/v3/owners/ with ``limit`` <= 500 and ``after``; scope crm.objects.owners.read;
  results {id, email, firstName, lastName, userId, createdAt, updatedAt, archived})
- OAuth v1: developers.hubspot.com/docs/api/oauth-quickstart-guide and the OAuth reference
  (GET app.hubspot.com/oauth/authorize, POST /oauth/v1/token with authorization_code or
  refresh_token, GET /oauth/v1/access-tokens/{token}, DELETE /oauth/v1/refresh-tokens/{token})
- Errors and limits: developers.hubspot.com/docs/api/error-handling and usage details
  (error body {status, message, correlationId, category}; 401 EXPIRED_AUTHENTICATION;
  429 {status, message, errorType: RATE_LIMIT, policyName}).

Strict: an unknown property, a bad enumeration value, a missing required property, a malformed
or non-JSON body, a missing or unknown bearer token and an expired one are refused as HubSpot
refuses them. ``rate_limit(n, retry_after)`` answers the next n API calls with 429.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

CONTACT_PROPERTIES = {"email", "firstname", "lastname", "company", "jobtitle", "phone",
                      "lifecyclestage", "hs_lead_status", "hubspot_owner_id"}
ENUMS = {
    "lifecyclestage": {"subscriber", "lead", "marketingqualifiedlead", "salesqualifiedlead",
                       "opportunity", "customer", "evangelist", "other"},
    "hs_lead_status": {"NEW", "OPEN", "IN_PROGRESS", "OPEN_DEAL", "UNQUALIFIED",
                       "ATTEMPTED_TO_CONTACT", "CONNECTED", "BAD_TIMING"},
    "hs_meeting_outcome": {"SCHEDULED", "COMPLETED", "RESCHEDULED", "NO_SHOW", "CANCELED"},
}
NOTE_PROPERTIES = {"hs_timestamp", "hs_note_body", "hubspot_owner_id", "hs_attachment_ids"}
MEETING_PROPERTIES = {"hs_timestamp", "hs_meeting_title", "hs_meeting_body",
                      "hs_meeting_start_time", "hs_meeting_end_time", "hs_meeting_outcome",
                      "hs_meeting_location", "hubspot_owner_id", "hs_internal_meeting_notes"}
OBJECTS = {"contacts": CONTACT_PROPERTIES, "notes": NOTE_PROPERTIES,
           "meetings": MEETING_PROPERTIES}
ASSOCIATION = {"notes": 202, "meetings": 200}  # -> contact
SCOPES = {"oauth", "crm.objects.contacts.read", "crm.objects.contacts.write",
          "crm.objects.owners.read"}
ACCESS_SECONDS = 1800  # HubSpot's access tokens live 30 minutes


@dataclass
class Token:
    value: str
    scopes: list[str]
    expires_at: float | None  # monotonic; None: a private app's token
    refresh: str = ""


@dataclass
class Request:
    method: str
    path: str
    status: int
    body: Any


@dataclass
class HubSpotStandIn:
    client_id: str = "standin-client-id"
    client_secret: str = "standin-client-secret"
    hub_id: int = 24680
    tokens: dict[str, Token] = field(default_factory=dict)
    refresh_tokens: dict[str, list[str]] = field(default_factory=dict)  # -> scopes
    codes: dict[str, tuple[str, list[str]]] = field(default_factory=dict)  # -> redirect, scopes
    objects: dict[str, dict[str, dict]] = field(
        default_factory=lambda: {name: {} for name in OBJECTS})
    associations: list[tuple[str, str, str, int]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    limited: int = 0
    retry_after: str = "1"
    fail_5xx: int = 0
    owners: dict[str, dict] = field(default_factory=dict)
    clock_ms: int = 0  # the last lastmodifieddate given: strictly increasing
    _ids: Any = field(default_factory=lambda: iter(range(1001, 10**9)))
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    # --- what tests set up
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def private_app_token(self, scopes: tuple[str, ...] = ("crm.objects.contacts.read",
                                                            "crm.objects.contacts.write",
                                                            "crm.objects.owners.read")) -> str:
        value = f"pat-na1-{uuid.uuid4()}"
        self.tokens[value] = Token(value, list(scopes), None)
        return value

    def expire(self, value: str) -> None:
        self.tokens[value].expires_at = time.monotonic() - 1

    def revoke_all(self) -> None:
        self.tokens.clear()
        self.refresh_tokens.clear()

    def rate_limit(self, calls: int, retry_after: str = "1") -> None:
        self.limited, self.retry_after = calls, retry_after

    def add_owner(self, email: str, first: str = "Rep", last: str = "Here") -> str:
        oid = self.new_id()
        self.owners[oid] = {"id": oid, "email": email, "firstName": first, "lastName": last,
                            "userId": int(oid) + 5000, "createdAt": _now(), "updatedAt": _now(),
                            "archived": False}
        return oid

    def edit_contact(self, contact_id: str, **properties: str) -> None:
        """A change made in HubSpot itself (a rep's edit, a workflow)."""
        with self.lock:
            record = self.objects["contacts"][contact_id]
            record["properties"].update(properties)
            _touch(self, record)

    def tick(self) -> int:
        self.clock_ms = max(self.clock_ms + 1, int(time.time() * 1000))
        return self.clock_ms

    def contacts(self) -> list[dict]:
        return list(self.objects["contacts"].values())

    def api_calls(self) -> list[Request]:
        return [r for r in self.requests if r.path.startswith("/crm/")]

    def associated(self, kind: str, contact_id: str) -> list[dict]:
        return [self.objects[kind][oid] for k, oid, cid, _ in self.associations
                if k == kind and cid == contact_id]

    # --- serving
    def start(self) -> HubSpotStandIn:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def new_id(self) -> str:
        return str(next(self._ids))


def _error(status: int, message: str, category: str, **extra: Any) -> tuple[int, dict]:
    return status, {"status": "error", "message": message,
                    "correlationId": str(uuid.uuid4()), "category": category, **extra}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


class _Refusal(Exception):
    def __init__(self, status: int, body: dict, headers: dict[str, str] | None = None):
        self.status, self.body, self.headers = status, body, headers or {}


def _handler(hub: HubSpotStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

        def do_PATCH(self):
            self._serve("PATCH")

        def do_DELETE(self):
            self._serve("DELETE")

        def _serve(self, method: str) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers: dict[str, str] = {}
            try:
                with hub.lock:
                    status, body = _route(hub, method, parts.path, parse_qs(parts.query), raw,
                                          self.headers)
            except _Refusal as refusal:
                status, body, headers = refusal.status, refusal.body, refusal.headers
            with hub.lock:
                hub.requests.append(Request(method, parts.path, status, _parsed(raw)))
            if isinstance(body, tuple):  # (content type, bytes): HTML pages, redirects
                kind, payload = body
                self.send_response(status)
                if kind == "redirect":
                    self.send_header("Location", payload.decode())
                    payload = b""
                else:
                    self.send_header("Content-Type", kind)
            else:
                payload = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json;charset=utf-8")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def _parsed(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


def _route(hub: HubSpotStandIn, method: str, path: str, query: dict, raw: bytes, headers
           ) -> tuple[int, Any]:
    if path == "/oauth/authorize" and method == "GET":
        return _authorize_page(hub, query)
    if path == "/oauth/authorize/grant" and method == "POST":
        return _grant(hub, parse_qs(raw.decode()))
    if path == "/oauth/v1/token" and method == "POST":
        return _token(hub, headers, raw)
    if m := re.fullmatch(r"/oauth/v1/access-tokens/([^/]+)", path):
        token = hub.tokens.get(m.group(1))
        if method != "GET" or token is None or token.expires_at is None:
            return _error(404, "Token not found", "OBJECT_NOT_FOUND")
        return 200, {"token": token.value, "user": "manager@acme.test", "hub_domain":
                     "acme.test", "scopes": token.scopes, "hub_id": hub.hub_id, "app_id": 777,
                     "expires_in": max(int(token.expires_at - time.monotonic()), 0),
                     "user_id": 1, "token_type": "access"}
    if m := re.fullmatch(r"/oauth/v1/refresh-tokens/([^/]+)", path):
        if method != "DELETE":
            return _error(405, "Method not allowed", "VALIDATION_ERROR")
        hub.refresh_tokens.pop(m.group(1), None)
        for value in [v for v, t in hub.tokens.items() if t.refresh == m.group(1)]:
            del hub.tokens[value]
        return 204, None
    if path.startswith("/crm/v3/objects/") or path == "/crm/v3/owners/":
        token = _authenticate(hub, headers)
        if hub.limited > 0:
            hub.limited -= 1
            raise _Refusal(429, {"status": "error", "message": "You have reached your secondly "
                                 "limit.", "errorType": "RATE_LIMIT", "correlationId":
                                 str(uuid.uuid4()), "policyName": "SECONDLY"},
                           {"Retry-After": hub.retry_after})
        if hub.fail_5xx > 0:
            hub.fail_5xx -= 1
            return _error(502, "Bad gateway", "INTERNAL_ERROR")
        if path == "/crm/v3/owners/":
            if method != "GET":
                return _error(405, f"{method} is not supported here", "VALIDATION_ERROR")
            return _owners(hub, token, query)
        return _crm(hub, method, path[len("/crm/v3/objects/"):], query, raw, headers)
    return _error(404, f"Unknown path {path}", "OBJECT_NOT_FOUND")


def _authenticate(hub: HubSpotStandIn, headers) -> Token:
    auth = headers.get("Authorization") or ""
    token = hub.tokens.get(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None
    if token is None:
        raise _Refusal(*_error(401, "Authentication credentials not found. This API supports "
                               "OAuth 2.0 authentication and you can find more details at "
                               "https://developers.hubspot.com/docs/methods/auth/oauth-overview",
                               "INVALID_AUTHENTICATION"))
    if token.expires_at is not None and token.expires_at < time.monotonic():
        raise _Refusal(*_error(401, "The OAuth token used to make this call expired "
                               f"{int(time.monotonic() - token.expires_at)} second(s) ago.",
                               "EXPIRED_AUTHENTICATION"))
    return token


def _json_body(raw: bytes, headers) -> dict:
    if not (headers.get("Content-Type") or "").startswith("application/json"):
        raise _Refusal(*_error(415, "Content type ' ' not supported", "VALIDATION_ERROR"))
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise _Refusal(*_error(400, f"Invalid input JSON on line 1, column 1: {exc}",
                               "VALIDATION_ERROR")) from None
    if not isinstance(body, dict):
        raise _Refusal(*_error(400, "Invalid input JSON: expected an object", "VALIDATION_ERROR"))
    return body


def _check_properties(kind: str, properties: Any, *, create: bool) -> dict[str, str]:
    if not isinstance(properties, dict):
        raise _Refusal(*_error(400, "Invalid input JSON: properties must be an object",
                               "VALIDATION_ERROR"))
    problems = []
    for name, value in properties.items():
        if name not in OBJECTS[kind]:
            problems.append({"isValid": False, "message": f'Property "{name}" does not exist',
                             "error": "PROPERTY_DOESNT_EXIST", "name": name})
        elif not isinstance(value, str | int | float) or isinstance(value, bool):
            problems.append({"isValid": False, "message": f"{value!r} is not a valid value",
                             "error": "INVALID_VALUE", "name": name})
        elif name in ENUMS and str(value) not in ENUMS[name]:
            problems.append({"isValid": False, "message": f"{value} was not one of the allowed "
                             "options", "error": "INVALID_OPTION", "name": name})
    if create and kind != "contacts" and "hs_timestamp" not in properties:
        problems.append({"isValid": False, "message": "hs_timestamp is required",
                         "error": "REQUIRED_PROPERTY", "name": "hs_timestamp"})
    if problems:
        raise _Refusal(*_error(400, f"Property values were not valid: {json.dumps(problems)}",
                               "VALIDATION_ERROR"))
    return {k: str(v) for k, v in properties.items()}


def _record(hub, kind: str, oid: str, properties: dict) -> dict:
    now = _now()
    record = {"id": oid, "properties": {**properties, "hs_object_id": oid, "createdate": now},
              "createdAt": now, "updatedAt": now, "archived": False}
    _touch(hub, record)
    return record


def _touch(hub, record: dict) -> None:
    """Every write moves ``lastmodifieddate`` (ISO 8601 in answers, as HubSpot gives it)."""
    ms = hub.tick()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
    record["properties"]["lastmodifieddate"] = stamp
    record["updatedAt"] = stamp
    record["_modified_ms"] = ms


def _crm(hub: HubSpotStandIn, method: str, rest: str, query: dict, raw: bytes, headers
         ) -> tuple[int, Any]:
    kind, _, tail = rest.partition("/")
    if kind not in OBJECTS:
        return _error(404, f"Unknown object type {kind}", "OBJECT_NOT_FOUND")
    store = hub.objects[kind]
    if method == "GET" and not tail:
        limit = int((query.get("limit") or ["10"])[0])
        if not 1 <= limit <= 100:
            return _error(400, "limit must be between 1 and 100", "VALIDATION_ERROR")
        return 200, {"results": [_public(r) for r in list(store.values())[:limit]]}
    if method == "POST" and tail == "search" and kind == "contacts":
        return _search(store, _json_body(raw, headers))
    if method == "POST" and not tail:
        body = _json_body(raw, headers)
        unknown = set(body) - {"properties", "associations", "objectWriteTraceId"}
        if unknown:
            return _error(400, f"Invalid input JSON: unknown fields {sorted(unknown)}",
                          "VALIDATION_ERROR")
        properties = _check_properties(kind, body.get("properties"), create=True)
        if kind == "contacts":
            email = properties.get("email", "").lower()
            existing = next((c["id"] for c in store.values()
                             if c["properties"].get("email", "").lower() == email and email), None)
            if existing:
                return _error(409, f"Contact already exists. Existing ID: {existing}",
                              "CONFLICT")
        links = _associations(hub, kind, body.get("associations") or [])
        oid = hub.new_id()
        store[oid] = _record(hub, kind, oid, properties)
        hub.associations += [(kind, oid, cid, type_id) for cid, type_id in links]
        return 201, _public(store[oid])
    if method == "PATCH" and tail and "/" not in tail:
        body = _json_body(raw, headers)
        if set(body) - {"properties", "objectWriteTraceId"}:
            return _error(400, "Invalid input JSON: only properties may be updated",
                          "VALIDATION_ERROR")
        properties = _check_properties(kind, body.get("properties"), create=False)
        if tail not in store:
            return _error(404, "resource not found", "OBJECT_NOT_FOUND")
        if kind == "contacts" and "email" in properties:
            clash = next((c["id"] for c in store.values() if c["id"] != tail and
                          c["properties"].get("email", "").lower() ==
                          properties["email"].lower()), None)
            if clash:
                return _error(409, f"Contact already exists. Existing ID: {clash}", "CONFLICT")
        store[tail]["properties"].update(properties)
        _touch(hub, store[tail])
        return 200, _public(store[tail])
    return _error(405, f"{method} is not supported here", "VALIDATION_ERROR")


def _associations(hub, kind: str, associations: Any) -> list[tuple[str, int]]:
    links = []
    if not isinstance(associations, list):
        raise _Refusal(*_error(400, "associations must be a list", "VALIDATION_ERROR"))
    for item in associations:
        try:
            target = str(item["to"]["id"])
            types = item["types"]
            type_id = int(types[0]["associationTypeId"])
            category = types[0]["associationCategory"]
        except (KeyError, TypeError, IndexError, ValueError):
            raise _Refusal(*_error(400, "Invalid association: to.id and types[] with "
                                   "associationCategory and associationTypeId are required",
                                   "VALIDATION_ERROR")) from None
        if category != "HUBSPOT_DEFINED" or type_id != ASSOCIATION.get(kind):
            raise _Refusal(*_error(400, f"{type_id} is not a valid association type between "
                                   f"{kind} and contacts", "VALIDATION_ERROR"))
        if target not in hub.objects["contacts"]:
            raise _Refusal(*_error(400, f"One or more associations are invalid: contact {target} "
                                   "does not exist", "VALIDATION_ERROR"))
        links.append((target, type_id))
    return links


def _public(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("_")}


SEARCH_OPERATORS = {"EQ", "GT", "GTE", "LT", "LTE"}
SEARCHABLE = CONTACT_PROPERTIES | {"lastmodifieddate", "createdate", "hs_object_id"}


def _search(store: dict, body: dict) -> tuple[int, Any]:
    unknown = set(body) - {"filterGroups", "sorts", "properties", "limit", "after", "query"}
    if unknown:
        return _error(400, f"Invalid input JSON: unknown fields {sorted(unknown)}",
                      "VALIDATION_ERROR")
    try:
        groups = body["filterGroups"]
        filters = [f for g in groups for f in g["filters"]]
        limit = int(body.get("limit", 10))
        after = int(body.get("after") or 0)
        checks = [(f["propertyName"], f["operator"], str(f["value"])) for f in filters]
        sorts = [(s["propertyName"], s.get("direction", "ASCENDING"))
                 for s in body.get("sorts") or []]
        wanted = [str(p) for p in body.get("properties") or ["email"]]
    except (KeyError, TypeError, ValueError):
        return _error(400, "Invalid search request: filterGroups[].filters[] need propertyName, "
                           "operator and value; after must be a number", "VALIDATION_ERROR")
    if not 1 <= limit <= 200 or after < 0 or len(groups) > 5 or len(sorts) > 1:
        return _error(400, "Invalid search request (limit 1-200, at most 5 filter groups and "
                      "one sort)", "VALIDATION_ERROR")
    for name, operator, _ in checks:
        if operator not in SEARCH_OPERATORS or name not in SEARCHABLE:
            return _error(400, f"Invalid search filter: {name} {operator}", "VALIDATION_ERROR")
    for name, direction in sorts:
        if name not in SEARCHABLE or direction not in ("ASCENDING", "DESCENDING"):
            return _error(400, f"Invalid sort: {name} {direction}", "VALIDATION_ERROR")
    if after + limit > 10000:
        return _error(400, "The search API returns at most 10,000 results per query",
                      "VALIDATION_ERROR")

    def value(record: dict, name: str) -> Any:
        if name == "lastmodifieddate":
            return record["_modified_ms"]
        return str(record["properties"].get(name, "")).lower()

    def matches(record: dict, name: str, operator: str, wanted_value: str) -> bool:
        have = value(record, name)
        if name == "lastmodifieddate":
            try:
                wanted_value = int(wanted_value)
            except ValueError:
                raise _Refusal(*_error(400, f"{wanted_value} is not a valid epoch millisecond "
                                       "timestamp", "VALIDATION_ERROR")) from None
        else:
            wanted_value = wanted_value.lower()
        return {"EQ": have == wanted_value, "GT": have > wanted_value,
                "GTE": have >= wanted_value, "LT": have < wanted_value,
                "LTE": have <= wanted_value}[operator]

    found = [c for c in store.values()
             if all(matches(c, name, op, v) for name, op, v in checks)]
    for name, direction in sorts:
        found.sort(key=lambda c, name=name: value(c, name), reverse=direction == "DESCENDING")
    page = found[after:after + limit]
    results = [{"id": c["id"], "properties": {
                    **{p: c["properties"].get(p) for p in wanted},
                    "hs_object_id": c["id"], "createdate": c["properties"].get("createdate"),
                    "lastmodifieddate": c["properties"].get("lastmodifieddate")},
                "createdAt": c["createdAt"], "updatedAt": c["updatedAt"], "archived": False}
               for c in page]
    answer: dict[str, Any] = {"total": len(found), "results": results}
    if after + limit < len(found):
        answer["paging"] = {"next": {"after": str(after + limit)}}
    return 200, answer


def _owners(hub: HubSpotStandIn, token: Token, query: dict) -> tuple[int, Any]:
    if "crm.objects.owners.read" not in token.scopes:
        return _error(403, "This app hasn't been granted all required scopes to make this "
                      "call. Read more about required scopes here: https://developers.hubspot."
                      "com/scopes.", "MISSING_SCOPES",
                      errors=[{"message": "One or more of the following scopes are required.",
                               "context": {"requiredGranularScopes":
                                           ["crm.objects.owners.read"]}}])
    try:
        limit = int((query.get("limit") or ["100"])[0])
        after = int((query.get("after") or ["0"])[0])
    except ValueError:
        return _error(400, "limit and after must be numbers", "VALIDATION_ERROR")
    if not 1 <= limit <= 500:
        return _error(400, "limit must be between 1 and 500", "VALIDATION_ERROR")
    owners = list(hub.owners.values())
    answer: dict[str, Any] = {"results": owners[after:after + limit]}
    if after + limit < len(owners):
        answer["paging"] = {"next": {"after": str(after + limit),
                                     "link": f"/crm/v3/owners/?after={after + limit}"}}
    return 200, answer


# --- OAuth ----------------------------------------------------------------------------------

def _authorize_page(hub: HubSpotStandIn, query: dict) -> tuple[int, Any]:
    client_id = (query.get("client_id") or [""])[0]
    redirect_uri = (query.get("redirect_uri") or [""])[0]
    scopes = (query.get("scope") or [""])[0].split()
    state = (query.get("state") or [""])[0]
    if client_id != hub.client_id or not redirect_uri or not scopes or set(scopes) - SCOPES:
        page = "<h1>Invalid authorization request</h1>"
        return 400, ("text/html", page.encode())
    hidden = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in
                     {"redirect_uri": redirect_uri, "scope": " ".join(scopes),
                      "state": state}.items())
    page = (f"<!doctype html><title>Connect to HubSpot</title><h1>Grant access</h1>"
            f"<p>Scopes: {' '.join(scopes)}</p><form method='post' action='/oauth/authorize/grant'>"
            f"{hidden}<button>Connect app</button></form>")
    return 200, ("text/html; charset=utf-8", page.encode())


def _grant(hub: HubSpotStandIn, form: dict) -> tuple[int, Any]:
    redirect_uri = form["redirect_uri"][0]
    code = secrets.token_hex(8)
    hub.codes[code] = (redirect_uri, form["scope"][0].split())
    query = urlencode({"code": code, "state": (form.get("state") or [""])[0]})
    return 302, ("redirect", f"{redirect_uri}?{query}".encode())


def _issue(hub: HubSpotStandIn, scopes: list[str], refresh: str) -> dict:
    value = f"CN{secrets.token_hex(16)}"
    hub.tokens[value] = Token(value, scopes, time.monotonic() + ACCESS_SECONDS, refresh)
    return {"token_type": "bearer", "refresh_token": refresh, "access_token": value,
            "expires_in": ACCESS_SECONDS}


def _token(hub: HubSpotStandIn, headers, raw: bytes) -> tuple[int, Any]:
    if not (headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
        return 400, {"status": "BAD_REQUEST", "message": "form-urlencoded body required"}
    form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
    if form.get("client_id") != hub.client_id or form.get("client_secret") != hub.client_secret:
        return 400, {"status": "BAD_CLIENT_ID", "message": "missing or invalid client_id"}
    if form.get("grant_type") == "authorization_code":
        known = hub.codes.pop(form.get("code", ""), None)
        if known is None or known[0] != form.get("redirect_uri"):
            return 400, {"status": "BAD_AUTH_CODE", "message": "missing or unknown auth code"}
        refresh = str(uuid.uuid4())
        hub.refresh_tokens[refresh] = known[1]
        return 200, _issue(hub, known[1], refresh)
    if form.get("grant_type") == "refresh_token":
        scopes = hub.refresh_tokens.get(form.get("refresh_token", ""))
        if scopes is None:
            return 400, {"status": "BAD_REFRESH_TOKEN", "message": "missing or unknown refresh "
                         "token"}
        return 200, _issue(hub, scopes, form["refresh_token"])
    return 400, {"status": "BAD_GRANT_TYPE", "message": "grant_type must be authorization_code "
                 "or refresh_token"}
