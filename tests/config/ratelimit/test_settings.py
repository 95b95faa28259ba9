"""The rate-limit settings read from the environment (fresh processes, as at start-up)."""

import json
import os
import subprocess
import sys

import pytest

from tests import live

pytestmark = pytest.mark.live  # fresh Python processes

ROOT = live.ROOT
_OURS = {"TRUST_X_FORWARDED_PROTO", "TRUST_X_FORWARDED_FOR", "RATE_LIMIT_ENABLED",
         "RATE_LIMIT_SLOT_LEASE_SECONDS", "IDEMPOTENCY_LOCK_SECONDS", "DATABASE_URL", "REDIS_URL",
         "DEBUG"}
PROBE = """
import json, django
from django.conf import settings
django.setup()
print(json.dumps({name: getattr(settings, name) for name in (
    "TRUST_X_FORWARDED_FOR", "RATE_LIMIT_ENABLED", "RATE_LIMIT_SLOT_LEASE_SECONDS",
    "IDEMPOTENCY_LOCK_SECONDS")} | {"expose": list(settings.CORS_EXPOSE_HEADERS),
                                    "allow": list(settings.CORS_ALLOW_HEADERS)}))
"""


def _settings(tmp_path, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in _OURS}
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings",
                                           "VAR_DIR": str(tmp_path), **env})


def test_defaults(tmp_path):
    proc = _settings(tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["TRUST_X_FORWARDED_FOR"] is False
    assert out["RATE_LIMIT_ENABLED"] is True
    assert out["RATE_LIMIT_SLOT_LEASE_SECONDS"] == 60
    assert out["IDEMPOTENCY_LOCK_SECONDS"] == 120
    # Browsers may send Idempotency-Key and read the rate-limit headers.
    assert "idempotency-key" in out["allow"] and "authorization" in out["allow"]
    assert {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
            "X-RateLimit-RetryAfter", "Retry-After", "Idempotent-Replayed"} <= set(out["expose"])


def test_trusting_the_proxy_for_the_scheme_trusts_it_for_the_address_unless_told(tmp_path):
    out = json.loads(_settings(tmp_path, TRUST_X_FORWARDED_PROTO="1").stdout)
    assert out["TRUST_X_FORWARDED_FOR"] is True
    out = json.loads(_settings(tmp_path, TRUST_X_FORWARDED_PROTO="1", TRUST_X_FORWARDED_FOR="0").stdout)
    assert out["TRUST_X_FORWARDED_FOR"] is False


@pytest.mark.parametrize(("env", "message"), [
    ({"RATE_LIMIT_ENABLED": "maybe"}, "RATE_LIMIT_ENABLED must be one of"),
    ({"RATE_LIMIT_SLOT_LEASE_SECONDS": "1"}, "RATE_LIMIT_SLOT_LEASE_SECONDS must be at least 3"),
    ({"IDEMPOTENCY_LOCK_SECONDS": "soon"}, "IDEMPOTENCY_LOCK_SECONDS must be an integer"),
    ({"TRUST_X_FORWARDED_FOR": "yes please"}, "TRUST_X_FORWARDED_FOR must be one of"),
])
def test_bad_values_stop_the_process(tmp_path, env, message):
    proc = _settings(tmp_path, **env)
    assert proc.returncode != 0
    assert message in proc.stderr
