"""``manage.py rebuild_counts``: the lead count tables, the lead search rows and the analytics
rollups recomputed from the raw rows, for data written around the services (a bulk load, a
repair)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from analytics.rebuild import rollups_rebuild
from leads.counts import lead_counts_rebuild
from leads.search import lead_search_rebuild
from tenants.models import Tenant
from tenants.selectors import tenant_by_reference

MODES = {"live": (True,), "test": (False,), "both": (True, False)}


class Command(BaseCommand):
    help = ("Recomputes the lead count tables, the lead search rows and the analytics rollups of "
            "tenants from their leads, conversations, messages, meetings and events.")

    def add_arguments(self, parser):
        parser.add_argument("tenants", nargs="*", help="Tenant ids (UUID) or public ids.")
        parser.add_argument("--all-tenants", action="store_true", help="Every tenant.")
        parser.add_argument("--mode", choices=sorted(MODES), default="both",
                            help="Live data, test data, or both (the default).")

    def handle(self, *args, tenants: list[str], all_tenants: bool, mode: str, **options):
        for tenant in self._tenants(tenants, all_tenants):
            for livemode in MODES[mode]:
                leads = lead_counts_rebuild(tenant_id=tenant.pk, livemode=livemode)
                lead_search_rebuild(tenant_id=tenant.pk, livemode=livemode)
                rollups_rebuild(tenant_id=tenant.pk, livemode=livemode)
                self.stdout.write(f"{tenant.public_id} {'live' if livemode else 'test'}: "
                                  f"counts, search rows and rollups rebuilt from {leads} leads")

    @staticmethod
    def _tenants(refs: list[str], all_tenants: bool):
        if all_tenants == bool(refs):
            raise CommandError("Name the tenants, or pass --all-tenants.")
        if all_tenants:
            return Tenant.objects.order_by("created_at", "id").iterator()
        found = [(ref, tenant_by_reference(ref)) for ref in refs]
        missing = [ref for ref, tenant in found if tenant is None]
        if missing:
            raise CommandError("No tenant with id or public id " + ", ".join(map(repr, missing)))
        return [tenant for _, tenant in found]
