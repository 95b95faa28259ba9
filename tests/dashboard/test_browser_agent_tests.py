"""The Agent tests page in a real browser (headless Chromium) against a real daphne process and
a real Celery worker on the embedded default, as with ``make run``: a manager uploads a document
through the Knowledge base page (indexed by the worker), creates a set of three questions (one
the document answers, with the fact expected; one asking for a person; one the document does not
answer), runs it, and sees the table of answers, decisions, passages and verdicts fill in as the
run's section refreshes itself, with no violation of the Content-Security-Policy. A rep is sent
home from the page; another tenant's set is 404. Screenshot: docs/screenshots/agent-tests.png
with ``SCREENSHOTS=1`` (``make screenshots``)."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.browser import browser, screenshot, watch_csp
from tests.live import celery_worker, daphne, manage

from .test_browser import EMBEDDED, PASSWORD

pytestmark = pytest.mark.live  # daphne, a Celery worker and Chromium

SETUP = """
import json
from agent.services import agent_test_set_create
from tenants.models import Tenant
from tenants.services import tenant_create, user_create
tenant = Tenant.objects.get(pk={tenant!r})
user_create(tenant=tenant, email="mia@acme.test", first_name="Mia", last_name="Manager",
            role="manager", password={password!r})
user_create(tenant=tenant, email="ray@acme.test", first_name="Ray", last_name="Rep",
            password={password!r})
stranger, _ = tenant_create(name="Globex")
theirs = agent_test_set_create(tenant=stranger, livemode=True, name="Globex launch",
                               questions=[{{"question": "Hello?", "expect_fact": "",
                                           "expect_decision": ""}}])
print(json.dumps({{"theirs": str(theirs.pk)}}))
"""

HANDBOOK = """# Plans

The Growth plan costs $99 per month and includes five seats.

# Onboarding

Every new customer gets a kickoff call and a shared Slack channel for the first month.
"""

QUESTIONS = ("How much is the Growth plan? | $99 | 99 dollars\n"
             "Can I talk to a real person, please? | | person\n"
             "Do you integrate with SAP? | | none")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    var = tmp_path_factory.mktemp("agent-tests")
    env = {**EMBEDDED, "VAR_DIR": str(var), "CELERY_TASK_ALWAYS_EAGER": None}
    manage("migrate", "--noinput", env=env)
    acme = json.loads(manage("create_tenant", "Acme", "--json", env=env))
    made = json.loads(manage("shell", "-c", SETUP.format(
        tenant=acme["tenant"]["id"], password=PASSWORD), env=env).splitlines()[-1])
    with browser() as chromium, daphne(env) as base, \
            celery_worker(env, var / "worker.log") as worker:
        yield {"base": base, "browser": chromium, "worker": worker,
               "worker_log": var / "worker.log", **made}


def _sign_in(context, base: str, email: str):
    page = context.new_page()
    page.goto(base + "/dashboard/login/")
    page.fill("#id_username", email)
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(base + "/dashboard/")
    return page


def _until(stack, ready, what: str, timeout: float = 300) -> None:
    """Waits for ``ready()``; the worker's log tells why when it does not come."""
    deadline = time.monotonic() + timeout
    while not ready():
        log = stack["worker_log"].read_text()[-3000:]
        assert time.monotonic() < deadline, f"{what}: not in {timeout} s\n{log}"
        assert stack["worker"].poll() is None, f"{what}: the worker died\n{log}"
        time.sleep(0.5)


def test_a_manager_tests_the_agent_on_an_uploaded_document(stack, tmp_path):
    base = stack["base"]
    handbook = tmp_path / "handbook.md"
    handbook.write_text(HANDBOOK)
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    violations = watch_csp(context)
    page = _sign_in(context, base, "mia@acme.test")

    # The document, through the Knowledge base's upload, indexed by the worker.
    page.get_by_role("link", name="Knowledge base").click()
    page.set_input_files("#file_file", str(handbook))
    page.fill("#file_title", "Handbook")
    page.get_by_role("button", name="Upload", exact=True).click()
    page.wait_for_url(base + "/dashboard/knowledge/")
    row = page.locator("#documents tbody tr", has_text="Handbook")

    def indexed() -> bool:
        if row.get_attribute("data-status") == "processing":
            page.reload()
            return False
        return True

    _until(stack, indexed, "the document's indexing")
    assert row.get_attribute("data-status") == "ready"

    # A set of three questions, pasted.
    page.get_by_role("link", name="Agent tests").click()
    page.wait_for_url(base + "/dashboard/agent-tests/")
    page.fill("#id_name", "Before launch")
    page.fill("#id_questions", QUESTIONS)
    page.get_by_role("button", name="Save set").click()
    page.wait_for_url(f"{base}/dashboard/agent-tests/*/")
    assert "Saved “Before launch” with 3 questions" in page.locator(".messages").inner_text()
    assert "Not run yet" in page.locator("#run").inner_text()

    # Run: the worker asks the questions; the run's section refreshes itself (no reload).
    page.get_by_role("button", name="Run now").click()
    page.wait_for_url(f"{base}/dashboard/agent-tests/*/#run")
    assert "Running “Before launch”" in page.locator(".messages").inner_text()
    _until(stack, lambda: page.locator("#run").get_attribute("data-run") == "done", "the run")
    results = page.locator("#run tbody tr")
    assert results.count() == 3
    assert [results.nth(i).get_attribute("data-passed") for i in range(3)] == ["yes", "yes", "yes"]
    price = results.nth(0).locator("td")
    assert "$99" in price.nth(2).inner_text() and "Handbook" in price.nth(4).inner_text()
    assert "pricing" in price.nth(3).inner_text() and price.nth(5).inner_text() == "Passed"
    person = results.nth(1).locator("td")
    assert "person" in person.nth(3).inner_text() and person.nth(4).inner_text() == "None"
    absent = results.nth(2).locator("td")
    assert absent.nth(4).inner_text() == "None"
    assert " ".join(page.locator("#run-passed").inner_text().split()) == "3 of 3 passed"
    assert page.get_by_role("button", name="Run again").is_enabled()
    page.evaluate("1")
    assert violations == []
    page.reload()  # as a manager finds it later: the results, without the "Running" message
    assert page.locator("#run tbody tr").count() == 3 and page.locator(".messages").count() == 0
    screenshot(page, "agent-tests.png", full_page=True)

    # Another tenant's set is not found.
    assert page.goto(f"{base}/dashboard/agent-tests/{stack['theirs']}/").status == 404
    context.close()


def test_a_rep_is_sent_home(stack):
    base = stack["base"]
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 900})
    page = _sign_in(context, base, "ray@acme.test")
    assert page.get_by_role("link", name="Agent tests").count() == 0
    page.goto(base + "/dashboard/agent-tests/")
    page.wait_for_url(base + "/dashboard/")
    assert "Only sales managers" in page.locator(".messages").inner_text()
    context.close()
    # Nor can anyone signed out reach it.
    r = httpx.get(base + "/dashboard/agent-tests/", follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"].startswith("/dashboard/login/")
