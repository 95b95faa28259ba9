"""A tenant's test sets (agent.services, docs/agent.md "Testing your agent"): the questions
read from pasted lines and files, the limits, a run through the tenant's real chat turn with
its documents and settings (answers, decisions, passages, pass/fail), the mode it runs in, a run
replaced or past its time, a provider that fails, and the proof that nothing of a run reaches
leads, conversations, analytics, events, webhooks or emails."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agent import services
from agent.eval.batch import Result, judge
from agent.models import RUN_STALE, AgentTestSet
from analytics.models import ChannelDailyStat, LeadDailyStat, LeadJourney, VisitorDay
from conversations import scheduling
from conversations.models import Conversation, Meeting, Message, OutboundEmail
from core.errors import Conflict, Unprocessable
from core.models import Event
from knowledge.services import document_create, document_index
from leads.models import Lead
from tenants.services import tenant_set_agent
from tests.chat_helpers import chat
from tests.factories import make_available
from tests.fakes.tcp_proxy import REFUSED
from tests.fakes.webhook_receiver import WebhookReceiver
from webhooks.models import Delivery
from webhooks.services import legacy_webhook_create, subscription_create

PRICING = ("# Plans\n\nThe Growth plan costs $99 per month and includes five seats.\n\n"
           "# Support\n\nSupport answers within four hours on working days.")
SANDBOX = "# Plans\n\nThe Growth plan costs $59 per month in the sandbox."


def _document(kit, title, text, *, livemode=True, url=""):
    document = document_create(tenant=kit.tenant, livemode=livemode, title=title,
                               type="markdown", data=text.encode(), url=url)
    return document_index(document_id=document.pk)


def _set(kit, lines, *, livemode=True, name="Before launch"):
    return services.agent_test_set_create(tenant=kit.tenant, livemode=livemode, name=name,
                                    questions=services.questions_from_text(lines))


def _run(test_set, **kwargs):
    started = services.agent_test_set_run_start(test_set=test_set)
    return services.agent_test_set_run(test_set_id=started.pk, token=started.run_token, **kwargs)


# --- questions ------------------------------------------------------------------------------

def test_pasted_lines_give_questions_facts_and_decisions():
    questions = services.questions_from_text(
        "How much is the Growth plan? | $99 | 99 dollars | pricing\n"
        "\n"
        "  Can I talk to someone?  |  | Person \n"
        "What is your refund policy?\n"
        "Where are you based? | Berlin | Munich\n"
        "What do you charge? | pricing |\n"
        "Not for us, thanks | not interested\n")
    assert questions == [
        {"question": "How much is the Growth plan?", "expect_fact": "$99 | 99 dollars",
         "expect_decision": "pricing"},
        {"question": "Can I talk to someone?", "expect_fact": "", "expect_decision": "person"},
        {"question": "What is your refund policy?", "expect_fact": "", "expect_decision": ""},
        {"question": "Where are you based?", "expect_fact": "Berlin | Munich",
         "expect_decision": ""},
        # An empty last column: "pricing" is the fact, no decision is expected.
        {"question": "What do you charge?", "expect_fact": "pricing", "expect_decision": ""},
        {"question": "Not for us, thanks", "expect_fact": "",
         "expect_decision": "not_interested"},
    ]
    # The edit box holds lines that read back as the same questions.
    assert services.questions_from_text(services.questions_as_text(questions)) == questions


def test_a_csv_file_with_a_header_and_a_text_file():
    data = ('question,expected fact,expected decision\r\n'
            '"How much is it, per seat?",$99|99 dollars,pricing\r\n'
            'Can I talk to someone?,,person\r\n'
            ',,\r\n'
            'What is your refund policy?\r\n').encode("utf-8-sig")
    assert services.questions_from_file(name="Questions.CSV", data=data) == [
        {"question": "How much is it, per seat?", "expect_fact": "$99 | 99 dollars",
         "expect_decision": "pricing"},
        {"question": "Can I talk to someone?", "expect_fact": "", "expect_decision": "person"},
        {"question": "What is your refund policy?", "expect_fact": "", "expect_decision": ""},
    ]
    assert services.questions_from_file(name="q.txt", data=b"Hello? | | greeting\n") == [
        {"question": "Hello?", "expect_fact": "", "expect_decision": "greeting"}]


@pytest.mark.parametrize(("name", "data", "message"), [
    ("questions.pdf", b"%PDF-1.4", "Upload a .txt or .csv file."),
    ("questions.txt", b"x" * (128 * 1024 + 1), "The file is larger than 128 KB."),
    ("questions.txt", "Größe? | 99".encode("latin-1"), "The file is not UTF-8 text."),
])
def test_files_that_are_refused(name, data, message):
    with pytest.raises(Unprocessable) as refused:
        services.questions_from_file(name=name, data=data)
    assert refused.value.message == message and refused.value.details[0].field == "file"


def test_lines_that_are_refused_name_their_line():
    with pytest.raises(Unprocessable) as refused:
        services.questions_from_file(name="q.csv", data=(
            "Fine question,,\n"
            + "x" * 501 + ",,\n"
            + "Ask, 42, persn\n"
            + "Two\tcolumns,,\n").encode())
    assert [d.message for d in refused.value.details] == [
        "Line 2: the question is longer than 500 characters.",
        "Line 3: “persn” is no decision: use one of person, meeting, pricing, contact, "
        "objection, not_interested, support, goodbye, greeting, product_question, none.",
        "Line 4: a question and its fact are one line each.",
    ]
    with pytest.raises(Unprocessable) as refused:
        services.questions_from_text("fine\n | a fact\n")
    assert [d.message for d in refused.value.details] == ["Line 2: the question is empty."]


def test_the_limits_of_a_set(kit, stranger):
    many = [{"question": f"Question {n}?", "expect_fact": "", "expect_decision": ""}
            for n in range(101)]
    with pytest.raises(Unprocessable) as refused:
        services.agent_test_set_create(tenant=kit.tenant, livemode=True, name="Big", questions=many)
    assert refused.value.details[0].message == ("A set holds at most 100 questions; this one "
                                                "has 101.")
    with pytest.raises(Unprocessable) as refused:
        services.agent_test_set_create(tenant=kit.tenant, livemode=True, name=" ", questions=[])
    assert [(d.field, d.code) for d in refused.value.details] == [("name", "required"),
                                                                   ("questions", "required")]
    with pytest.raises(Unprocessable) as refused:
        services.agent_test_set_create(tenant=kit.tenant, livemode=True, name="A|B",
                                 questions=[{"question": "a | b", "expect_fact": "",
                                             "expect_decision": ""}])
    assert "cannot hold “|”" in refused.value.details[0].message

    # Twenty per tenant, both modes together; another tenant has its own twenty.
    for n in range(services.MAX_SETS):
        _set(kit, "Hello?", livemode=n % 2 == 0, name=f"Set {n}")
    with pytest.raises(Unprocessable) as refused:
        _set(kit, "Hello?", livemode=False)
    assert refused.value.message == "A tenant keeps at most 20 test sets: delete one first."
    assert _set(stranger, "Hello?").tenant == stranger.tenant


# --- the verdicts ---------------------------------------------------------------------------

@pytest.mark.parametrize(("expected", "answer", "decisions", "passed"), [
    ({"expect_fact": "$99 | 99 dollars"}, "It costs **99  Dollars** a month.", [], True),
    ({"expect_fact": "$99"}, "It costs $199.", [], False),
    ({"expect_fact": "$199"}, "It costs $199.", [], True),
    ({"expect_decision": "person"}, "", ["person"], True),
    ({"expect_decision": "person"}, "", ["pricing", "meeting"], False),
    ({"expect_decision": "none"}, "", ["pricing", "product_question"], True),
    ({"expect_decision": "none"}, "", ["pricing", "contact"], False),
    ({"expect_fact": "five seats", "expect_decision": "pricing"}, "Five seats.", ["pricing"],
     True),
    ({"expect_fact": "five seats", "expect_decision": "person"}, "Five seats.", ["pricing"],
     False),
    ({}, "Hello!", ["greeting"], None),
])
def test_a_result_passes_with_the_fact_and_the_decision(expected, answer, decisions, passed):
    result = judge(Result(question="Q?", answer=answer, decisions=decisions, **expected))
    assert result.passed is passed


def test_an_error_fails_what_was_expected():
    result = judge(Result(question="Q?", expect_decision="none", error="The provider failed."))
    assert result.passed is False and result.decision_found is False


# --- a run ----------------------------------------------------------------------------------

def test_a_run_answers_from_the_documents_and_takes_decisions(kit, manager):
    _document(kit, "Plans and support", PRICING, url="https://acme.example/pricing")
    test_set = _set(kit, "How much is the Growth plan? | $99 | 99 dollars\n"
                         "Can I talk to a real person, please? | | person\n"
                         "Do you integrate with SAP? | | none\n"
                         "I'm Dana from Northwind, dana@northwind.example | | contact\n"
                         "How fast does support answer? | 24 hours\n"
                         "Good morning\n")
    done = _run(test_set)

    run = done.last_run
    assert (run["total"], run["checked"], run["passed"], run["errors"]) == (6, 5, 4, 0)
    assert run["provider"] == "builtin" and run["seconds"] > 0 and run["finished_at"]
    price, person, absent, contact, support, hello = done.last_results

    assert "$99" in price["answer"] and price["fact_found"] is True and price["passed"] is True
    assert price["intent"] == "pricing" and "pricing" in price["decisions"]
    assert price["passages"] == [{"title": "Plans and support", "url": "https://acme.example/pricing",
                                  "excerpt": price["passages"][0]["excerpt"]}]
    assert "$99" in price["passages"][0]["excerpt"]

    assert "person" in person["decisions"] and person["passed"] is True
    assert person["intent"] == "human_request" and person["passages"] == []

    # Nothing in the documents answers it: no passage, and no person, meeting or contact.
    assert absent["passages"] == [] and absent["passed"] is True
    assert not {"person", "meeting", "contact"} & set(absent["decisions"])

    assert "contact" in contact["decisions"] and contact["passed"] is True

    # The document says four hours: the expected "24 hours" is not in the answer.
    assert "four hours" in support["answer"] and support["fact_found"] is False
    assert support["passed"] is False and support["passages"][0]["title"] == "Plans and support"

    assert hello["passed"] is None and "greeting" in hello["decisions"] and hello["answer"]
    assert all(r["seconds"] > 0 and not r["error"] for r in done.last_results)
    # The run is over: the set can run again, and its last run is of its questions.
    assert done.run_token is None and not done.running and done.last_run_current


def test_a_run_is_in_the_sets_mode(kit):
    _document(kit, "Plans", PRICING)
    _document(kit, "Sandbox plans", SANDBOX, livemode=False)
    live = _run(_set(kit, "How much is the Growth plan? | $99"))
    test = _run(_set(kit, "How much is the Growth plan? | $59", livemode=False))
    assert live.last_run["passed"] == 1 and test.last_run["passed"] == 1
    assert "$59" not in live.last_results[0]["answer"]
    assert test.last_results[0]["passages"][0]["title"] == "Sandbox plans"


def test_the_tenants_settings_answer(kit, manager):
    """A booking link in the settings: a request for a meeting offers it."""
    tenant_set_agent(tenant=kit.tenant, provider="builtin", booking_url="https://cal.example/acme")
    kit.tenant.refresh_from_db()
    done = _run(_set(kit, "Could we set up a call next week to see the product? | "
                          "https://cal.example/acme | meeting"))
    assert done.last_results[0]["passed"] is True


def test_a_provider_that_cannot_answer_fails_each_question(kit):
    tenant_set_agent(tenant=kit.tenant, provider="openai", api_key=None)
    done = _run(_set(kit, "How much is it? | $99\nHello"))
    first, second = done.last_results
    assert "not configured" in first["error"] and first["passed"] is False
    assert second["error"] and second["passed"] is None
    assert done.last_run["errors"] == 2 and done.last_run["passed"] == 0


def test_a_run_past_its_time_leaves_the_rest_unasked(kit):
    done = _run(_set(kit, "Hello\nHow much is it? | $99"), seconds=-1)
    assert [r["error"] for r in done.last_results] == [
        "Not asked: the run stops after 0 minutes."] * 2
    assert done.last_results[1]["passed"] is False


def test_a_replaced_run_keeps_nothing(kit):
    test_set = _set(kit, "Hello")
    started = services.agent_test_set_run_start(test_set=test_set)
    with pytest.raises(Conflict):
        services.agent_test_set_run_start(test_set=test_set)
    # One set runs at a time in a tenant.
    with pytest.raises(Conflict) as refused:
        services.agent_test_set_run_start(test_set=_set(kit, "Bye", name="Other"))
    assert "“Before launch” is running" in refused.value.message
    # Edited meanwhile: the run's token is no longer the set's.
    edited = services.agent_test_set_update(test_set=started, name="Renamed",
                                      questions=services.questions_from_text("Hi there"))
    assert services.agent_test_set_run(test_set_id=started.pk, token=started.run_token) is None
    edited.refresh_from_db()
    assert edited.last_run is None and edited.run_token is None and edited.name == "Renamed"
    # Deleted: nothing to run.
    again = services.agent_test_set_run_start(test_set=edited)
    services.agent_test_set_delete(test_set=again)
    assert services.agent_test_set_run(test_set_id=again.pk, token=again.run_token) is None


def test_an_edit_marks_the_last_run_as_older_than_the_questions(kit):
    done = _run(_set(kit, "Hello"))
    assert done.last_run_current and done.question_count == 1
    renamed = services.agent_test_set_update(test_set=done, name="Renamed",
                                             questions=services.questions_from_text("Hello"))
    assert renamed.last_run_current  # the same questions: the run is theirs
    edited = services.agent_test_set_update(
        test_set=renamed, name="Renamed", questions=services.questions_from_text(
            "Hello | | greeting\nBye"))
    assert edited.last_run and not edited.last_run_current and edited.question_count == 2
    assert len(edited.last_results) == 1


def test_a_run_lost_long_ago_does_not_hold_the_set(kit):
    """A worker that died mid-run: after ``RUN_STALE`` the set (and the tenant) may run again."""
    test_set = _set(kit, "Hello")
    lost = services.agent_test_set_run_start(test_set=test_set)
    AgentTestSet.objects.filter(pk=lost.pk).update(
        run_queued_at=timezone.now() - RUN_STALE - timedelta(seconds=1))
    lost.refresh_from_db()
    assert not lost.running
    again = services.agent_test_set_run_start(test_set=lost)
    assert again.running and again.run_token != lost.run_token
    # The lost run's task, should it wake, keeps nothing.
    assert services.agent_test_set_run(test_set_id=lost.pk, token=lost.run_token) is None


def test_the_run_is_queued_after_the_commit_and_run_by_the_task(
        kit, eager_celery, django_capture_on_commit_callbacks):
    test_set = _set(kit, "Hello | | greeting")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        started = services.agent_test_set_run_start(test_set=test_set)
        assert started.running and started.last_run is None
    assert len(callbacks) == 1
    test_set.refresh_from_db()
    assert test_set.last_run["passed"] == 1 and not test_set.running


def test_a_broker_that_cannot_be_reached_leaves_the_set_not_running(
        kit, broken_broker, django_capture_on_commit_callbacks):
    broken_broker.outage(REFUSED)
    test_set = _set(kit, "Hello")
    with django_capture_on_commit_callbacks(execute=True):
        assert services.agent_test_set_run_start(test_set=test_set).running
    test_set.refresh_from_db()
    assert not test_set.running and test_set.run_token is None  # Run starts it again


# --- nothing leaks --------------------------------------------------------------------------

COUNTED = (Lead, Conversation, Message, Meeting, Event, Delivery, OutboundEmail, VisitorDay,
           ChannelDailyStat, LeadDailyStat, LeadJourney)


def _counts():
    return {model.__name__: model.objects.count() for model in COUNTED}


@pytest.fixture
def receiver(settings):
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOKS_TIMEOUT_SECONDS = 5
    fake = WebhookReceiver()
    yield fake
    fake.close()


def test_nothing_of_a_run_reaches_leads_analytics_events_webhooks_or_emails(
        api, kit, manager, receiver, eager_celery, email_queue,
        django_capture_on_commit_callbacks):
    """Every question of the set would write, emit and deliver in a real conversation: a lead,
    a meeting booked with its emails and calendar write, a handoff to the rep online with its
    live push, a meeting offered, the events and their rollups, webhooks to a subscribed
    receiver. After the run every table counts what it did before, nothing was queued to happen
    after a commit, the receiver got nothing and no email was queued; a real visitor's chat,
    the control, reaches the receiver and the email queue through the same paths."""
    every_event = ["lead.created", "lead.updated", "conversation.started", "message.received",
                   "message.sent", "conversation.handoff"]
    subscription_create(tenant=kit.tenant, livemode=True, url=receiver.url(), events=every_event)
    legacy_webhook_create(tenant=kit.tenant, url=receiver.url() + "/legacy",
                          events=["lead.created", "lead.qualified"])
    _document(kit, "Plans", PRICING)
    make_available(manager)
    slot = scheduling.free_slots(kit.tenant, True, now=timezone.now(), count=1)[0].token
    booking = f"I'm Dana from Northwind, dana@northwind.example: please book {slot}"
    test_set = _set(kit, f"{booking} | booked | meeting\n"
                         "I'm Lee from Initech, lee@initech.example, we are 40 people "
                         "and need it this quarter | | contact\n"
                         "I want to talk to a human | | person\n"
                         "Can I book a demo? | | meeting\n"
                         "How much is the Growth plan? | $99\n")
    started = services.agent_test_set_run_start(test_set=test_set)
    before = _counts()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        done = services.agent_test_set_run(test_set_id=started.pk, token=started.run_token)
    assert done.last_run["passed"] == 5, done.last_results
    assert callbacks == []
    assert _counts() == before
    assert receiver.received == [] and email_queue == []

    with django_capture_on_commit_callbacks(execute=True):
        reply = chat(api, kit, booking)
    assert reply.status_code == 200 and "booked" in reply.json()["content"]
    assert receiver.wait_for(1) and Lead.objects.count() == before["Lead"] + 1
    assert Meeting.objects.count() == before["Meeting"] + 1
    assert email_queue  # the visitor's invitation, the host's notice
