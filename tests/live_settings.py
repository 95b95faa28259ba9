"""Settings of the live servers that rate-limit and idempotency tests start: the project's,
plus the probe views of tests/urls_limits.py."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "tests.urls_limits"
