"""Rate limits and idempotency (docs/rate-limits.md, docs/idempotency.md).

The limits themselves are constants in ``config/ratelimit/tables.py``: they are what the plans
sell. Only operational knobs are settings.
"""

from .env import env_bool, env_int

# Off only for load tests and emergencies: every API response then lacks the X-RateLimit-*
# headers and nothing is counted.
RATE_LIMIT_ENABLED = env_bool("RATE_LIMIT_ENABLED", True)

# How long a concurrency slot stays held without a sign of life. A request releases its slot
# when it ends; a stream renews its slot every third of this while it is open. A process that
# dies holding slots gives them back after at most this many seconds.
RATE_LIMIT_SLOT_LEASE_SECONDS = env_int("RATE_LIMIT_SLOT_LEASE_SECONDS", 60, minimum=3)


# An Idempotency-Key whose first request is still running answers 409 to duplicates; after this
# long without an answer the first request is presumed dead and a retry may take the key over.
IDEMPOTENCY_LOCK_SECONDS = env_int("IDEMPOTENCY_LOCK_SECONDS", 120, minimum=5)
