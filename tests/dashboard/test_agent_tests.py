"""The dashboard's Agent tests page over HTTP: a set created from pasted lines and from a file,
refused input shown beside its field, a run queued and its results table with pass/fail, the
progress while it runs, edit and delete, managers only (a rep is sent home), CSRF, and the tenant
and mode walls (another tenant's set is 404)."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agent import services
from agent.models import AgentTestSet
from knowledge.services import document_create, document_index
from tenants.services import user_create
from tests.dashboard.client import Client, signed_in
from tests.dashboard.html import errors_beside, page, value_of
from tests.factories import PASSWORD

PAGE = "/dashboard/agent-tests/"
NEW = "/dashboard/agent-tests/new/"
LINES = ("How much is the Growth plan? | $99 | 99 dollars\n"
         "Can I talk to a real person, please? | | person\n"
         "Do you integrate with SAP? | | none\n")


def _set(kit, lines=LINES, *, livemode=True, name="Before launch") -> AgentTestSet:
    return services.agent_test_set_create(tenant=kit.tenant, livemode=livemode, name=name,
                                    questions=services.questions_from_text(lines))


def _rows(html: str) -> list[tuple[str, str]]:
    """(number, passed) of each row of the results table."""
    return re.findall(r'data-result="(\d+)" data-passed="(\w+)"', html)


def test_a_manager_creates_a_set_from_pasted_lines(kit, manager):
    client = signed_in(manager)
    html = client.get(PAGE).content.decode()
    assert 'aria-current="page">Agent tests' in html and "No test set yet" in html
    r = client.post(NEW, {"name": "Before launch", "questions": LINES})
    created = AgentTestSet.objects.get()
    assert r.status_code == 302 and r["Location"] == f"{PAGE}{created.pk}/"
    assert (created.tenant, created.livemode, created.name) == (kit.tenant, True, "Before launch")
    assert created.questions[0] == {"question": "How much is the Growth plan?",
                                    "expect_fact": "$99 | 99 dollars", "expect_decision": ""}

    html = client.get(r["Location"]).content.decode()
    assert "Saved “Before launch” with 3 questions" in html
    assert "Not run yet" in html and "Run now" in html
    # The edit box holds the set as lines.
    assert services.questions_from_text(value_of(html, "edit_questions")) == created.questions
    listed = client.get(PAGE).content.decode()
    assert f'data-test-set="{created.pk}"' in listed and "Never run" in listed


def test_a_csv_file_makes_a_set(kit, manager):
    data = b"question,expected fact,expected decision\nCan I talk to someone?,,person\n"
    r = signed_in(manager).post(NEW, {"name": "From a file", "questions": "",
                                      "file": SimpleUploadedFile("q.csv", data, "text/csv")})
    assert r.status_code == 302
    assert AgentTestSet.objects.get().questions == [
        {"question": "Can I talk to someone?", "expect_fact": "", "expect_decision": "person"}]


@pytest.mark.parametrize(("data", "field", "error"), [
    ({"name": "", "questions": "Hello?"}, "id_name", "This field is required."),
    ({"name": "Empty", "questions": "  \n"}, "id_questions", "Add at least one question."),
    ({"name": "Typo", "questions": "Hello?\nFine | x\nBad question | | | \n" + "y" * 501},
     "id_questions", "Line 4: the question is longer than 500 characters."),
    ({"name": "Many", "questions": "\n".join(f"Question {n}?" for n in range(101))},
     "id_questions", "A set holds at most 100 questions; this one has 101."),
    ({"name": "Pdf", "questions": "", "file": SimpleUploadedFile("q.pdf", b"%PDF-1.4")},
     "id_file", "Upload a .txt or .csv file."),
])
def test_refused_input_comes_back_beside_its_field(kit, manager, data, field, error):
    r = signed_in(manager).post(NEW, data)
    assert r.status_code == 400 and error in errors_beside(r.content, field)
    assert value_of(r.content, "id_name") == (data["name"] or None)
    assert not AgentTestSet.objects.exists()


def test_both_a_file_and_lines_is_refused(kit, manager):
    r = signed_in(manager).post(NEW, {"name": "Both", "questions": "Hello?",
                                      "file": SimpleUploadedFile("q.txt", b"Hi?")})
    assert r.status_code == 400 and "Paste questions or upload a file, not both." in r.content.decode()


def test_a_run_shows_each_answer_decision_passage_and_verdict(
        kit, manager, eager_celery, django_capture_on_commit_callbacks):
    document_index(document_id=document_create(
        tenant=kit.tenant, livemode=True, title="Plans", type="markdown",
        data=b"# Plans\n\nThe Growth plan costs $99 per month and includes five seats.").pk)
    test_set = _set(kit, LINES + "How fast does support answer? | 4 hours\n")
    client = signed_in(manager)
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(f"{PAGE}{test_set.pk}/run/")
    assert r.status_code == 302 and r["Location"] == f"{PAGE}{test_set.pk}/#run"

    html = client.get(f"{PAGE}{test_set.pk}/").content.decode()
    assert "Running “Before launch”" in html
    assert _rows(html) == [("1", "yes"), ("2", "yes"), ("3", "yes"), ("4", "no")]
    doc = page(html)
    passed = " ".join(doc.xpath("//*[@id='run-passed']")[0].text_content().split())
    assert passed == "3 of 4 passed"
    first = doc.xpath("//tr[@data-result='1']")[0]
    cells = [" ".join(td.text_content().split()) for td in first.xpath("td")]
    assert "$99" in cells[2] and "pricing" in cells[3] and "Plans" in cells[4]
    assert "The Growth plan costs $99" in cells[4] and cells[5] == "Passed"
    person = [" ".join(td.text_content().split()) for td in doc.xpath("//tr[@data-result='2']/td")]
    assert "person" in person[3] and person[4] == "None"
    missed = [" ".join(td.text_content().split()) for td in doc.xpath("//tr[@data-result='4']/td")]
    assert missed[5] == "Failed Fact not in the answer"
    assert "Run again" in html and "agent_tests.js" not in html
    listed = client.get(PAGE).content.decode()
    assert "3 of 4 passed" in listed


def test_while_it_runs_the_page_says_how_far_and_refreshes(kit, manager):
    test_set = _set(kit)
    started = services.agent_test_set_run_start(test_set=test_set)
    AgentTestSet.objects.filter(pk=test_set.pk).update(run_done=2)
    client = signed_in(manager)
    html = client.get(f"{PAGE}{test_set.pk}/").content.decode()
    assert 'data-run="running"' in html and "2 of 3" in html
    assert '<script src="/static/dashboard/agent_tests.js">' in html
    assert page(html).xpath("//form[contains(@action, '/run/')]/button/@disabled")
    assert "Running" in client.get(PAGE).content.decode()
    # Run again meanwhile: refused with a message, nothing queued twice.
    r = client.post(f"{PAGE}{test_set.pk}/run/", follow=True)
    assert "This set is running already" in r.content.decode()
    test_set.refresh_from_db()
    assert test_set.run_token == started.run_token


def test_edit_and_delete(kit, manager):
    test_set = _set(kit)
    services.agent_test_set_run(test_set_id=test_set.pk,
                          token=services.agent_test_set_run_start(test_set=test_set).run_token)
    client = signed_in(manager)
    r = client.post(f"{PAGE}{test_set.pk}/edit/", {"name": "Renamed",
                                                   "questions": "Hello | | greeting"})
    assert r.status_code == 302
    html = client.get(f"{PAGE}{test_set.pk}/").content.decode()
    assert "<h1>Renamed" in html and "The questions changed since this run" in html
    r = client.post(f"{PAGE}{test_set.pk}/edit/", {"name": "Renamed", "questions": ""})
    assert r.status_code == 400 and "Add at least one question." in errors_beside(
        r.content, "edit_questions")
    r = client.post(f"{PAGE}{test_set.pk}/delete/", follow=True)
    assert "Deleted “Renamed”." in r.content.decode() and not AgentTestSet.objects.exists()


def test_reps_are_sent_home(kit, rep):
    test_set = _set(kit)
    client = signed_in(rep)
    for r in (client.get(PAGE, follow=True), client.get(f"{PAGE}{test_set.pk}/", follow=True),
              client.post(NEW, {"name": "X", "questions": "Hi"}, follow=True),
              client.post(f"{PAGE}{test_set.pk}/run/", follow=True),
              client.post(f"{PAGE}{test_set.pk}/delete/", follow=True)):
        assert r.redirect_chain[-1][0] == "/dashboard/" and b"Only sales managers" in r.content
    assert b"Agent tests" not in client.get("/dashboard/").content
    assert AgentTestSet.objects.get() == test_set and test_set.run_token is None


def test_another_tenants_set_and_the_other_modes_are_404(kit, stranger, manager):
    theirs = _set(stranger, name="Their secret set")
    sandbox = _set(kit, name="Sandbox set", livemode=False)
    client = signed_in(manager)
    for test_set in (theirs, sandbox):
        base = f"{PAGE}{test_set.pk}/"
        assert client.get(base).status_code == 404
        for action in ("run/", "edit/", "delete/"):
            assert client.post(base + action, {"name": "Mine", "questions": "Hi"}).status_code == 404
    listed = client.get(PAGE).content.decode()
    assert "Their secret set" not in listed and "Sandbox set" not in listed
    assert AgentTestSet.objects.filter(name__in=["Their secret set", "Sandbox set"]).count() == 2
    assert AgentTestSet.objects.filter(run_token__isnull=False).count() == 0

    # In test mode the manager sees (and makes) test-mode sets only.
    client.post("/dashboard/mode/", {"mode": "test"})
    assert "Sandbox set" in client.get(PAGE).content.decode()
    client.post(NEW, {"name": "Sandbox two", "questions": "Hi"})
    assert AgentTestSet.objects.get(name="Sandbox two").livemode is False


def test_forms_are_csrf_protected(kit, manager):
    test_set = _set(kit)
    client = Client(enforce_csrf_checks=True)
    client.force_login(manager)
    assert client.post(NEW, {"name": "X", "questions": "Hi"}).status_code == 403
    for action in ("run/", "edit/", "delete/"):
        assert client.post(f"{PAGE}{test_set.pk}/{action}").status_code == 403
    assert list(AgentTestSet.objects.all()) == [test_set]
    html = client.get(PAGE).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    r = client.post(NEW, {"name": "X", "questions": "Hi", "csrfmiddlewaretoken": token})
    assert r.status_code == 302 and AgentTestSet.objects.count() == 2


def test_the_admin_token_manages_sets_too(kit, stranger):
    """Signed in with the admin token: a manager's rights (docs/dashboard.md)."""
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    r = client.post(NEW, {"name": "Admin's", "questions": "Hi"})
    assert r.status_code == 302 and AgentTestSet.objects.get().tenant == kit.tenant
    # A stranger's staff cannot sign in to this tenant's sets by knowing the id.
    other = user_create(tenant=stranger.tenant, email="sam@stranger.test", role="manager",
                        password=PASSWORD)
    assert signed_in(other).get(r["Location"]).status_code == 404
