"""Logging: one line per record on stderr, carrying the request id where there is one, with
email addresses masked (config/logs.py; docs/privacy.md, "Logs")."""

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.middleware.RequestIdLogFilter"}},
    "formatters": {
        "line": {
            "()": "config.logs.RedactingFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        }
    },
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "line",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["stderr"], "level": "INFO"},
    "loggers": {
        "django.request": {"level": "ERROR", "propagate": True},
        "django.server": {"level": "WARNING", "propagate": True},
    },
}
