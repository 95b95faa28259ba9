"""Written-out statements read rows into the very instances the ORM would build
(config/sql.py)."""

from __future__ import annotations

from decimal import Decimal

from apikeys.models import ApiKey
from apikeys.services import api_key_authenticate, api_key_create
from tenants.models import Tenant
from tests.factories import make_tenant


def _values(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_key_lookup_loads_the_key_and_its_tenant_as_the_orm_does(db):
    kit = make_tenant("Columns Inc")
    Tenant.objects.filter(pk=kit.tenant.pk).update(
        meeting_days=[0, 2, 4], allowed_origins=["https://shop.example"],
        default_deal_value=Decimal("1234.50"), booking_url="https://cal.example/x")
    _, raw = api_key_create(tenant=kit.tenant, name="columns", scope="write", livemode=False)

    key = api_key_authenticate(raw)

    orm_key = ApiKey.objects.get(pk=key.pk)
    orm_tenant = Tenant.objects.get(pk=kit.tenant.pk)
    for loaded, expected in ((key, orm_key), (key.tenant, orm_tenant)):
        values, wanted = _values(loaded), _values(expected)
        assert values == wanted
        assert {k: type(v) for k, v in values.items()} == {k: type(v) for k, v in wanted.items()}
        assert loaded._state.adding is False and loaded._state.db == "default"
    assert key.tenant.default_deal_value == Decimal("1234.50")
    assert key.tenant.allowed_origins == ["https://shop.example"]
    assert key.tenant_id == kit.tenant.pk and key.livemode is False


def test_an_unknown_secret_finds_nothing(db):
    make_tenant("Columns Inc")
    assert api_key_authenticate("sk_live_" + "x" * 40) is None
