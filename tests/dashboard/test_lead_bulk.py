"""Bulk actions on the list of leads: the checked rows or every lead matching the filter, each
lead through its service (events fire), with a summary; deletes (managers only) go through the
erasure; a selection above the limit is a Celery job with its progress. Another tenant's and
the other mode's leads are never touched."""

from __future__ import annotations

import pytest

from core.models import Event
from leads import bulk
from leads.models import JobStatus, Lead, LeadBulkJob
from privacy.models import Erasure
from tests.dashboard.client import signed_in
from tests.factories import make_lead


@pytest.fixture
def leads(kit):
    """Six live leads at Globex (two already qualified), one in test mode, and a stranger's."""
    made = [make_lead(kit, email=f"p{i}@globex.example", company="Globex",
                      status="qualified" if i < 2 else "new", tags=["expo"] if i % 2 else [])
            for i in range(6)]
    make_lead(kit, mode="test", email="t@globex.example", company="Globex")
    return made


@pytest.fixture
def theirs(stranger):
    return make_lead(stranger, email="x@globex.example", company="Globex")


def _post(client, **data):
    defaults = {"action": "status", "new_status": "qualified", "scope": "checked",
                "next": "/dashboard/leads/?q=globex"}
    return client.post("/dashboard/leads/bulk/", {**defaults, **data}, follow=True)


def test_the_checked_leads_get_the_status_each_through_the_service(kit, rep, leads, theirs):
    client = signed_in(rep)
    chosen = [lead.pk for lead in leads[:4]]
    response = _post(client, lead=[*chosen, theirs.pk])  # a stranger's id is left out
    assert response.redirect_chain[-1][0] == "/dashboard/leads/?q=globex"
    assert "2 leads status set to Qualified. 2 already were so." in response.content.decode()
    assert set(Lead.objects.filter(status="qualified").values_list("pk", flat=True)) == set(chosen)
    # Events as for the API: one lead.updated and one lead.qualified per changed lead.
    for lead in leads[2:4]:
        assert Event.objects.filter(lead_id=lead.pk, type="lead.qualified").count() == 1
    assert not Event.objects.filter(lead_id=leads[0].pk, type="lead.updated").exists()
    theirs.refresh_from_db()
    assert theirs.status == "new"


def test_all_matching_the_filter_changes_every_match_and_no_other(kit, rep, manager, leads, theirs):
    make_lead(kit, email="other@initech.example", company="Initech")
    client = signed_in(rep)
    response = _post(client, action="owner", new_owner=str(manager.pk), scope="all",
                     filter_q="globex")
    assert "6 leads assigned to Mia." in response.content.decode()
    assert Lead.objects.filter(assigned_to=manager).count() == 6
    assert not Lead.objects.filter(assigned_to=manager, company="Initech").exists()
    assert not Lead.objects.filter(assigned_to=manager, livemode=False).exists()
    theirs.refresh_from_db()
    assert theirs.assigned_to_id is None


def test_tags_are_added_and_removed(kit, rep, leads):
    client = signed_in(rep)
    ids = [lead.pk for lead in leads]
    response = _post(client, action="tag_add", tag="VIP", lead=ids)
    assert "6 leads tagged “VIP”." in response.content.decode()
    response = _post(client, action="tag_remove", tag="expo", lead=ids)
    assert "3 leads tag “expo” removed. 3 already were so." in response.content.decode()
    assert {tuple(tags) for tags in Lead.objects.filter(livemode=True).values_list(
        "tags", flat=True)} == {("VIP",)}


def test_a_refused_lead_is_counted_and_the_others_go_on(kit, rep, leads):
    full = make_lead(kit, email="full@globex.example", tags=[f"t{i}" for i in range(50)])
    response = _post(signed_in(rep), action="tag_add", tag="new", lead=[full.pk, leads[0].pk])
    assert "1 lead tagged “new”. 1 refused: At most 50 tags." in response.content.decode()


@pytest.mark.parametrize("data, message", [
    ({"lead": []}, "check the leads to change first"),
    ({"new_status": "bogus"}, "Choose one of the listed statuses."),
    ({"action": "tag_add", "tag": " "}, "Type the tag."),
    ({"action": "owner", "new_owner": "00000000-0000-4000-8000-000000000000"},
     "Choose a member of the team."),
])
def test_a_bad_request_changes_nothing_and_says_why(kit, rep, leads, data, message):
    response = _post(signed_in(rep), **{"lead": [leads[3].pk], **data})
    assert message in response.content.decode()
    assert Lead.objects.get(pk=leads[3].pk).status == "new"


def test_only_managers_delete_and_a_delete_erases_each_person(kit, rep, manager, leads, theirs,
                                                               django_capture_on_commit_callbacks):
    ids = [leads[0].pk, leads[1].pk, theirs.pk]
    response = _post(signed_in(rep), action="delete", lead=ids)
    assert "Only sales managers" in response.content.decode()
    assert Lead.objects.filter(pk__in=ids).count() == 3
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(signed_in(manager), action="delete", lead=ids)
    assert "2 leads deleted (erased everywhere)." in response.content.decode()
    assert list(Lead.objects.filter(pk__in=ids).values_list("pk", flat=True)) == [theirs.pk]
    erasures = Erasure.objects.filter(tenant=kit.tenant)
    assert erasures.count() == 2 and {e.requested_by for e in erasures} == {"Mia"}
    assert Event.objects.filter(type="lead.deleted", tenant=kit.tenant).count() == 2


def test_the_list_offers_the_bar_and_delete_only_to_managers(kit, rep, manager, leads):
    rep_page = signed_in(rep).get("/dashboard/leads/").content.decode()
    manager_page = signed_in(manager).get("/dashboard/leads/?q=globex").content.decode()
    assert 'name="lead" value="' in rep_page and '<option value="delete">' not in rep_page
    assert '<option value="delete">Delete</option>' in manager_page
    assert "All 6 matching the filter" in manager_page
    assert 'name="filter_q" value="globex"' in manager_page


def test_above_the_limit_a_job_does_it_with_progress(kit, rep, leads, theirs, monkeypatch,
                                                     eager_celery,
                                                     django_capture_on_commit_callbacks):
    monkeypatch.setattr(bulk, "SYNC_LIMIT", 3)
    monkeypatch.setattr(bulk, "BATCH", 4)  # two batches: the job goes on from its last lead
    client = signed_in(rep)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post("/dashboard/leads/bulk/", {
            "action": "status", "new_status": "lost", "scope": "all", "filter_q": "globex",
            "filter_status": "new"})
    job = LeadBulkJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/dashboard/leads/bulk/{job.pk}/"
    assert (job.status, job.total, job.processed, job.filters) == (
        JobStatus.QUEUED, 4, 0, {"q": "globex", "status": "new"})
    page = client.get(f"/dashboard/leads/bulk/{job.pk}/").content.decode()
    assert "Set status on 4 leads" in page and 'data-progress="' in page
    assert client.get(f"/dashboard/leads/bulk/{job.pk}/status/").json() == {
        "status": "queued", "done": False, "total": 4, "processed": 0, "percent": 0,
        "changed": 0, "unchanged": 0, "failed": 0}
    for callback in callbacks:  # the task, run as a worker would after the commit
        callback()
    job.refresh_from_db()
    assert (job.status, job.processed, job.changed, job.filters) == (JobStatus.DONE, 4, 4, {})
    assert Lead.objects.filter(status="lost").count() == 4
    assert client.get(f"/dashboard/leads/bulk/{job.pk}/status/").json()["percent"] == 100
    assert "4 leads status set to Lost." in client.get(f"/dashboard/leads/bulk/{job.pk}/").content.decode()
    theirs.refresh_from_db()
    assert theirs.status == "new"


def test_a_job_is_404_to_another_tenant_and_mode(kit, stranger, rep, leads):
    from tenants.services import user_create

    job = bulk.bulk_job_create(tenant=kit.tenant, livemode=True, user=rep, requested_by="Ray",
                               action="status", value="lost", filters={}, total=6)
    outsider = signed_in(user_create(tenant=stranger.tenant, email="eve@stranger.test",
                                     password="a-long-enough-password"))
    assert outsider.get(f"/dashboard/leads/bulk/{job.pk}/").status_code == 404
    assert outsider.get(f"/dashboard/leads/bulk/{job.pk}/status/").status_code == 404
    test_mode = signed_in(rep)
    test_mode.post("/dashboard/mode/", {"mode": "test"})
    assert test_mode.get(f"/dashboard/leads/bulk/{job.pk}/").status_code == 404


def test_a_job_run_again_goes_on_and_a_stale_one_is_swept(kit, leads, monkeypatch):
    job = bulk.bulk_job_create(tenant=kit.tenant, livemode=True, user=None, requested_by="Admin",
                               action="tag_add", value="swept", filters={"q": "globex"}, total=6)
    sent = []
    monkeypatch.setattr(bulk, "_enqueue", sent.append)
    assert bulk.bulk_jobs_sweep() == 0
    LeadBulkJob.objects.filter(pk=job.pk).update(updated_at=job.updated_at - bulk.STALE_AFTER * 2)
    assert bulk.bulk_jobs_sweep() == 1 and sent == [job.pk]
    done = bulk.bulk_job_run(job_id=job.pk)
    assert done.status == JobStatus.DONE and done.changed == 6
    assert bulk.bulk_job_run(job_id=job.pk) is None  # idempotent
    assert all("swept" in tags
               for tags in Lead.objects.filter(livemode=True).values_list("tags", flat=True))
