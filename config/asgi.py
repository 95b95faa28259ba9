"""The ASGI application, served by daphne.

HTTP goes to Django (static files served beside it, so the embedded default needs no other
server), through a handler that keeps a pool of request threads (config/handlers.py).
Server-Sent Events are plain streaming HTTP responses from async views.
"""

import gc
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from config.handlers import get_asgi_application  # noqa: E402
from config.serving import stop_twisted_parsing_bodies  # noqa: E402

stop_twisted_parsing_bodies()

django_asgi_app = get_asgi_application()

application = ProtocolTypeRouter({"http": ASGIStaticFilesHandler(django_asgi_app)})

# What start-up loaded (modules, settings, URL patterns, models: about 160,000 objects) lives as
# long as the process. Every full collection walked all of it while a request stood still (259
# ms on the benchmark machine under load); frozen, collections see only what requests make
# (docs/performance.md, "Chat").
gc.collect()
gc.freeze()
