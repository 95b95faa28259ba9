"""The quickstart's demo tenant (``config/demo.py``): creates or reuses it, allows the local
origins of ``--base-url`` to embed its widget, and prints its ids, keys and URLs.

``make run`` does the same through ``serve --demo-tenant``, which prints the block once the
server, the worker and beat are up, below their start-up banners."""

from django.core.management.base import BaseCommand

from config.demo import demo_lines, demo_tenant_ensure


class Command(BaseCommand):
    help = "Creates or reuses the demo tenant (builtin agent) and prints its ids, keys and URLs."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, base_url: str, **options):
        demo = demo_tenant_ensure(base_url=base_url)
        self.stdout.write("\n".join(demo_lines(demo, base_url=base_url)))
