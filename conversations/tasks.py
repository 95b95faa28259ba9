"""Background work of the conversations: the idle-expiry sweeper (run by beat every minute)."""

from celery import shared_task

from .services import conversations_expire_idle


@shared_task(name="conversations.expire_idle", ignore_result=True)
def expire_idle_conversations() -> int:
    """Moves conversations idle for 30 minutes to ``expired``. Safe to run twice at once."""
    return conversations_expire_idle()
