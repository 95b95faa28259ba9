"""Test data, built through the services so that tests see what production would."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import factory

from apikeys.models import ApiKey
from apikeys.services import api_key_create
from leads.models import Lead
from leads.services import lead_create
from tenants.models import Tenant, User
from tenants.services import tenant_create

# Working hours that hold at any time of any day.
ALWAYS = {"days": [0, 1, 2, 3, 4, 5, 6], "start_hour": 0, "end_hour": 24}


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User

    username = factory.Sequence(lambda n: f"rep{n}@example.com")
    email = factory.SelfAttribute("username")
    first_name = factory.Faker("first_name")
    last_name = factory.Faker("last_name")
    tenant = None

    class Params:
        # Someone handoffs may go to whatever the time of the test: online, working every hour
        # of every day (docs/dashboard.md, "Availability and routing").
        available = factory.Trait(status="online", working_hours=ALWAYS)


def make_available(user: User) -> User:
    """``user`` made someone handoffs may go to (the ``available`` trait, for a user made
    otherwise): online, within working hours at any time."""
    user.status, user.working_hours = "online", ALWAYS
    user.save(update_fields=["status", "working_hours"])
    return user


@dataclass
class TenantKit:
    """A tenant with its admin token and a key of each scope in each mode."""

    tenant: Tenant
    admin_token: str
    keys: dict[str, dict[str, str]] = field(default_factory=dict)
    key_rows: dict[str, dict[str, ApiKey]] = field(default_factory=dict)

    def key(self, scope: str = "admin", mode: str = "live") -> str:
        return self.keys[mode][scope]

    def auth(self, scope: str = "admin", mode: str = "live") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key(scope, mode)}"}


def make_tenant(name: str = "Acme Inc", plan: str = "starter", agent: str = "builtin") -> TenantKit:
    tenant, token = tenant_create(name=name, plan=plan, agent_provider=agent)
    kit = TenantKit(tenant=tenant, admin_token=token)
    for mode, livemode in (("live", True), ("test", False)):
        kit.keys[mode], kit.key_rows[mode] = {}, {}
        for scope in ("read", "write", "admin"):
            row, raw = api_key_create(tenant=tenant, name=f"{mode} {scope}", scope=scope,
                                      livemode=livemode)
            kit.keys[mode][scope] = raw
            kit.key_rows[mode][scope] = row
    return kit


_lead_numbers = itertools.count(1)


# The password of the staff accounts the tests create.
PASSWORD = "a-long-enough-password"


def make_lead(kit: TenantKit, mode: str = "live", **fields) -> Lead:
    """A lead of ``kit``'s tenant, created through the service (events and counts included)."""
    fields.setdefault("email", f"lead{next(_lead_numbers)}@example.com")
    return lead_create(tenant=kit.tenant, livemode=(mode == "live"), **fields)
