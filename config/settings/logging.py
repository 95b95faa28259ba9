"""Logging: one line per record on stderr, carrying the request id, the tenant's public id, the
surface and the route template where there are some, with email addresses masked
(config/logs.py; docs/privacy.md, "Logs"; docs/operations.md, "Logs and traces").

``LOG_FORMAT``: ``json`` (one JSON object per line, for a machine: the default when DEBUG is
off) or ``text`` (for a person: the default of the embedded default, ``make run``).
"""

from django.core.exceptions import ImproperlyConfigured

from .env import env_str

LOG_FORMATS = ("json", "text")


def logging_settings(debug: bool) -> dict:
    log_format = env_str("LOG_FORMAT").lower() or ("text" if debug else "json")
    if log_format not in LOG_FORMATS:
        raise ImproperlyConfigured(f"LOG_FORMAT must be json or text; got {log_format!r}")
    formatter = {"()": "config.logs.JsonFormatter"} if log_format == "json" else {
        "()": "config.logs.RedactingFormatter",
        "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s %(tenant)s %(surface)s "
                  "%(route)s] %(message)s",
    }
    return {
        "LOG_FORMAT": log_format,
        "LOGGING": {
            "version": 1,
            "disable_existing_loggers": False,
            "filters": {"context": {"()": "config.logs.ContextFilter"}},
            "formatters": {"line": formatter},
            "handlers": {
                "stderr": {
                    "class": "logging.StreamHandler",
                    "formatter": "line",
                    "filters": ["context"],
                }
            },
            "root": {"handlers": ["stderr"], "level": "INFO"},
            "loggers": {
                "django.request": {"level": "ERROR", "propagate": True},
                "django.server": {"level": "WARNING", "propagate": True},
            },
        },
    }
