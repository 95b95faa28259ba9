"""Background work of the conversations: the idle-expiry sweeper (run by beat every minute),
and the service's emails (one attempt per task, and their sweeper)."""

from uuid import UUID

from celery import shared_task

from .services import conversations_expire_idle
from .services.emails import email_attempt
from .services.emails import emails_sweep as sweep_emails
from .services.routing import routing_sweep


@shared_task(name="conversations.expire_idle", ignore_result=True)
def expire_idle_conversations() -> int:
    """Moves conversations idle for 30 minutes to ``expired``. Safe to run twice at once."""
    return conversations_expire_idle()


@shared_task(name="conversations.send_email", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)
def send_email(email_id: str) -> bool:
    """One attempt of a due email; nothing when it is not due or another worker has it."""
    return email_attempt(email_id=UUID(email_id)) is not None


@shared_task(name="conversations.emails_sweep", ignore_result=True)
def emails_sweep() -> int:
    """Beat, every 15 seconds: re-enqueue due emails (retries after their backoff)."""
    return sweep_emails()


@shared_task(name="conversations.routing_sweep", ignore_result=True)
def offer_waiting_handoffs() -> int:
    """Beat, every 30 seconds: handoffs waiting in the Unassigned queue are offered to the
    people online whose working hours began or whose capacity freed since."""
    return routing_sweep()
