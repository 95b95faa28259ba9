"""One small interface per CRM, and the registry of them: a CRM is a module here that
registers its ``Connector`` class; nothing elsewhere names a CRM."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

REGISTRY: dict[str, type[Connector]] = {}


def register(cls: type[Connector]) -> type[Connector]:
    REGISTRY[cls.provider] = cls
    return cls


def connector_class(provider: str) -> type[Connector]:
    _load()
    return REGISTRY[provider]


def _load() -> None:
    from . import hubspot  # noqa: F401 -- registers itself


@dataclass(frozen=True)
class Tokens:
    """What an OAuth code exchange or refresh gives."""

    access_token: str
    refresh_token: str
    expires_at: datetime | None
    scopes: list[str]
    account_id: str = ""


@dataclass(frozen=True)
class MeetingFacts:
    title: str
    body: str
    starts_at: datetime
    ends_at: datetime
    cancelled: bool
    rescheduled: bool


@dataclass(frozen=True)
class RemoteContact:
    """A contact as read back from the CRM: its id, email, the status properties (those the
    status mapping names), its owner's id, and when it last changed (the poll's cursor)."""

    remote_id: str
    email: str
    properties: dict[str, str]
    owner_id: str
    modified: str


@dataclass(frozen=True)
class ChangedPage:
    contacts: list[RemoteContact]
    after: str  # the next page's token; blank on the last page


class Connector(ABC):
    """A CRM's API as the sync needs it. ``token`` is the access token to send; every method
    raises ``integrations.http.CrmError`` (Transient, RateLimited, Refused, AuthRefused) when the
    CRM does not answer with success."""

    provider: ClassVar[str]
    label: ClassVar[str]
    scopes: ClassVar[tuple[str, ...]]  # the fewest the sync needs
    oauth_scopes: ClassVar[tuple[str, ...]]  # what the OAuth consent asks for
    default_field_mapping: ClassVar[dict[str, str]]
    default_status_mapping: ClassVar[dict[str, dict[str, str]]]

    def __init__(self, *, base_url: str, token: str):
        self.base_url = base_url.rstrip("/")
        self.token = token

    # --- connecting
    @classmethod
    @abstractmethod
    def configured_base_url(cls) -> str:
        """The API's base URL unless a connection names another (settings)."""

    @classmethod
    @abstractmethod
    def oauth_configured(cls) -> bool:
        """Whether the service has an OAuth app for this CRM (its client id and secret)."""

    @abstractmethod
    def verify(self) -> str:
        """Checks the token with one harmless read; the CRM account's id when it says."""

    @classmethod
    @abstractmethod
    def authorize_url(cls, *, state: str, redirect_uri: str) -> str:
        """Where the manager grants access (OAuth 2.0 authorization code flow)."""

    @abstractmethod
    def exchange_code(self, *, code: str, redirect_uri: str) -> Tokens:
        """The tokens an authorization code is worth."""

    @abstractmethod
    def refresh(self, *, refresh_token: str) -> Tokens:
        """A new access token, before the current one expires."""

    @abstractmethod
    def revoke(self, *, refresh_token: str) -> None:
        """Revokes the connection's grant at the CRM (OAuth); a private token is the CRM
        admin's to delete."""

    # --- what goes out
    @abstractmethod
    def upsert_contact(self, *, remote_id: str, email: str, properties: dict[str, Any]) -> str:
        """The contact with this email, created or updated; its CRM id."""

    @abstractmethod
    def set_status(self, *, remote_id: str, properties: dict[str, str]) -> None:
        """Sets the contact's status properties (lifecycle stage, lead status) by mapping."""

    @abstractmethod
    def upsert_note(self, *, remote_id: str, contact_id: str, body: str,
                    timestamp: datetime) -> str:
        """The conversation's one note on the contact, created or updated; its CRM id."""

    @abstractmethod
    def upsert_meeting(self, *, remote_id: str, contact_id: str, meeting: MeetingFacts) -> str:
        """The meeting on the contact, created or updated; its CRM id."""

    # --- what comes back
    @staticmethod
    @abstractmethod
    def cursor_at(moment: datetime) -> str:
        """The cursor of changes made from ``moment`` on (where reading back starts: the
        connection's time of connecting, not the CRM's whole history)."""

    @abstractmethod
    def changed_contacts(self, *, since: str, after: str, properties: list[str],
                         limit: int) -> ChangedPage:
        """One page of the contacts changed after ``since`` (a cursor this connector gave),
        the oldest change first."""

    @abstractmethod
    def owner_emails(self) -> dict[str, str]:
        """The CRM's record owners: id -> email."""
