"""The ASGI application, served by daphne.

HTTP goes to Django (static files served beside it, so the embedded default needs no other
server), through a handler that keeps a pool of request threads (config/handlers.py).
Server-Sent Events are plain streaming HTTP responses from async views.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from channels.routing import ProtocolTypeRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from config.handlers import get_asgi_application  # noqa: E402
from config.serving import (  # noqa: E402
    configure_daphne_access_log,
    configure_daphne_requests,
    settle_garbage_collector,
    warm_up_the_agent,
)
from config.shutdown import configure_daphne_shutdown  # noqa: E402
from config.tracing import start_tracing  # noqa: E402

configure_daphne_requests()
configure_daphne_access_log()
configure_daphne_shutdown()
# Off unless the OTEL_* variables ask for it; before the handler loads the middleware.
start_tracing("web")

django_asgi_app = get_asgi_application()

application = ProtocolTypeRouter({"http": ASGIStaticFilesHandler(django_asgi_app)})

warm_up_the_agent()

settle_garbage_collector()
