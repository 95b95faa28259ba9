"""What understanding by meaning costs a turn (``make bench``; issue 27, "Cost").

Two daphne processes with production settings on the benchmark database and Redis, side by
side: one as deployed (``AGENT_UNDERSTANDING=meaning``: the rules and the examples' meaning, with
the embedding model), one with the rules alone (``AGENT_UNDERSTANDING=rules``, the path before
issue 27, kept for this comparison). The same builtin turns go to both, interleaved round by
round (A B, then B A): conversations of six messages of a tenant without documents, each
message a text new to the servers (``tests/benchmarks/corpus.py``), as a visitor's is, so the
model embeds each one (its cache of recent texts would otherwise answer). A tenant without
documents has no question embedded for retrieval (``knowledge.retrieval``), so the rules' turns
run no model at all and the difference is the whole of the model's cost; what dense retrieval
adds for a tenant with documents is measured by test_retrieval_bench.py.

Each measurement is a turn's own time: the turn less the authenticated floor
(``GET /api/v1/users?limit=1``) of the same server just before it. The aim: the median own time
with the model at most 1.5 times the median with the rules alone.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from conversations.models import Message, Role
from tenants.models import Plan, Tenant
from tests.benchmarks import harness
from tests.benchmarks.chat import Visitors, bench_keys
from tests.benchmarks.corpus import Messages
from tests.benchmarks.harness import check, interleave, ms, ratio_cell
from tests.live import daphne

pytestmark = pytest.mark.bench

TENANT_NAME = "Understanding benchmark"
ROUNDS = 200
WARMUP = 24  # not timed: the models load as a process starts, and the first turns wait for them
AIM = 1.5


@pytest.fixture(scope="session")
def django_db_setup(bench_database):
    return bench_database


@pytest.fixture(scope="module")
def keys(django_db_setup, django_db_blocker) -> list[str]:
    with django_db_blocker.unblock():
        tenant, _ = Tenant.objects.get_or_create(name=TENANT_NAME,
                                                 defaults={"plan": Plan.ENTERPRISE})
        assert not tenant.documents.exists()
        return bench_keys(tenant, "understanding bench")


def _decided(visitor: str, since) -> tuple[int, int]:
    """Of the replies to ``visitor``'s conversations since ``since``: how many recorded a decision
    by meaning (``Message.turn["decisions"]``), and how many there were."""
    turns = list(Message.objects.filter(
        conversation__tenant__name=TENANT_NAME, conversation__visitor_id__startswith=f"{visitor}-",
        role=Role.ASSISTANT, created_at__gte=since).values_list("turn", flat=True))
    return sum(bool(turn.get("decisions")) for turn in turns), len(turns)


def test_a_turn_with_the_model_against_the_rules_alone(service_env, keys, django_db_blocker):
    started = timezone.now()
    messages = Messages(seed=27)
    texts: list[str] = []

    def message(number: int) -> str:
        # Both servers get the same texts in the same order (each process its own cache).
        while len(texts) <= number:
            texts.append(messages.next(len(texts)))
        return texts[number]

    with daphne(service_env) as meaning_url, \
            daphne({**service_env, "AGENT_UNDERSTANDING": "rules"}) as rules_url:
        meaning = Visitors(meaning_url, keys, message, visitor="meaning")
        rules = Visitors(rules_url, keys, message, visitor="rules")
        result = interleave(meaning.own, rules.own, rounds=ROUNDS, warmup=WARMUP)
        meaning.close()
        rules.close()
    with django_db_blocker.unblock():
        by_meaning, rules_alone = _decided("meaning", started), _decided("rules", started)
    # Each server read the messages as its setting says: the model took decisions on one only.
    assert by_meaning[0] > 0 and by_meaning[1] == ROUNDS + WARMUP, by_meaning
    assert rules_alone == (0, ROUNDS + WARMUP), rules_alone
    for side in (meaning, rules):
        side.skip(WARMUP)
    table = harness.table("understanding", ["Measure", "Median ms", "p95 ms", "p99 ms"])
    for label, side in (("by meaning (the model)", meaning), ("rules alone", rules)):
        for what, values in (("turn, through HTTP", side.turns),
                             ("floor: GET /api/v1/users?limit=1", side.floors),
                             ("own time: the turn less the floor before it", side.owns)):
            samples = harness.Samples(values)
            table.rows.append([f"{label}: {what}", ms(samples.median), ms(samples.p95),
                               ms(samples.p99)])
    table.notes.append(
        f"- Own time by meaning ÷ rules alone (medians, interquartile range of the rounds' "
        f"ratios): {ratio_cell(result)}; p95 {result.p95_ratio:.2f}. {ROUNDS} rounds after "
        f"{WARMUP} of warm-up; the model took a decision in {by_meaning[0]} of the "
        f"{by_meaning[1]} turns.")
    table.notes.append(f"- The embedding model's BLAS threads: {harness.embedding_threads()}.")
    print("\n" + table.markdown())
    check("understanding", "builtin turn's own time, by meaning ÷ rules alone (medians)",
          result.ratio, AIM)
