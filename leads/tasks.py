"""Background work of leads: bulk actions on many leads, CSV imports, and their sweeper
(docs/dashboard.md, "Bulk actions" and "Importing leads"). Each task takes the id of its row
and works until the row says it is done, so running one twice is harmless."""

import logging

from celery import shared_task

from .bulk import bulk_job_fail, bulk_job_run, bulk_jobs_sweep
from .imports import lead_import_fail, lead_import_run, lead_imports_sweep

logger = logging.getLogger("salesagent.leads")


@shared_task(name="leads.bulk_job", ignore_result=True)
def bulk_job(job_id: str) -> str | None:
    try:
        job = bulk_job_run(job_id=job_id)
    except Exception as exc:
        # Not retried: the leads it reached stay changed and the person can ask again.
        logger.exception("Bulk action %s failed", job_id)
        bulk_job_fail(job_id=job_id, reason=f"Stopped by an error ({type(exc).__name__}).")
        return None
    return job.status if job else None


@shared_task(name="leads.import", ignore_result=True)
def import_leads(import_id: str) -> str | None:
    try:
        job = lead_import_run(import_id=import_id)
    except Exception as exc:
        logger.exception("Import %s failed", import_id)
        lead_import_fail(import_id=import_id,
                         reason=f"Stopped by an error ({type(exc).__name__}).")
        return None
    return job.status if job else None


@shared_task(name="leads.sweep", ignore_result=True)
def sweep() -> int:
    """Jobs and imports that no task moves for a while go to the broker again; uploads nobody
    started within a day are deleted."""
    return bulk_jobs_sweep() + lead_imports_sweep()
