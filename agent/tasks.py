"""Background work of the agent: a run of a tenant's test set (docs/agent.md, "Testing your
agent")."""

from celery import shared_task

from .services import RUN_SECONDS, agent_test_set_run


# The run stops asking after RUN_SECONDS itself; the limits only catch a worker stuck elsewhere.
@shared_task(name="agent.run_test_set", ignore_result=True,
             soft_time_limit=RUN_SECONDS + 120, time_limit=RUN_SECONDS + 180)
def run_test_set(run: list[str]) -> int | None:
    """Runs one queued run: ``[set id, run token]``. A run that was replaced, or a set that was
    deleted, is left alone. Returns how many questions passed."""
    test_set_id, token = run
    done = agent_test_set_run(test_set_id=test_set_id, token=token)
    return None if done is None else done.last_run["passed"]
