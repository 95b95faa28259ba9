"""Agent tests: a tenant's sets of questions for its own agent, run against its documents and
settings before visitors meet it (docs/agent.md, "Testing your agent"). Every read is an
``agent.selectors`` query and every write one ``agent.services`` call, through the actor: the
page adds forms, messages and the results table. A run is a background task; the set's page
says how far it got, and a small script (``static/dashboard/agent_tests.js``) refreshes the run's
section until the results are there (without it, a reload does).

Managers and the admin token: a run asks the agent as many questions as the set holds."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from agent import selectors as agent_selectors
from agent import services as agent_services
from agent.eval.batch import EXPECTED
from core.errors import ServiceError, Unprocessable
from core.timestamps import parse_timestamp

from ..auth import dashboard_view
from .common import attempt, mark_invalid, refuse_on_form

EXAMPLE = ("How much is the Growth plan? | $99 | 99 dollars | pricing\n"
           "Can I talk to someone on your team? | | person\n"
           "Do you integrate with SAP? | | none")


class TestSetForm(forms.Form):
    """A set's name and its questions, pasted (one a line) or, on creation, as a file."""

    name = forms.CharField(max_length=agent_services.MAX_NAME_CHARS, label="Name",
                           widget=forms.TextInput(attrs={"placeholder": "Before launch"}))
    questions = forms.CharField(required=False, strip=False, label="Questions",
                                widget=forms.Textarea(attrs={"rows": 8, "placeholder": EXAMPLE,
                                                             "spellcheck": "false"}))
    file = forms.FileField(required=False, allow_empty_file=True, label="Or upload a file",
                           widget=forms.FileInput(attrs={"accept": ".txt,.csv,text/plain,text/csv"}))

    def __init__(self, *args, with_file: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        if not with_file:
            del self.fields["file"]

    def read_questions(self) -> list[dict[str, str]]:
        """The questions of the file, or else of the box (``agent.services`` reads both)."""
        upload = self.cleaned_data.get("file")
        text = self.cleaned_data["questions"]
        if upload is not None and text.strip():
            raise Unprocessable("Paste questions or upload a file, not both.")
        if upload is not None:
            return agent_services.questions_from_file(
                name=upload.name, data=upload.read(agent_services.MAX_FILE_BYTES + 1))
        return agent_services.questions_from_text(text)


def _test_set(request: HttpRequest, test_set_id: str):
    return request.actor.get(agent_selectors.agent_test_set_get, test_set_id=test_set_id)


def _context(**extra) -> dict:
    return {"section": "agent-tests", "decisions": EXPECTED, "example": EXAMPLE,
            "max_questions": agent_services.MAX_QUESTIONS,
            "max_chars": agent_services.MAX_QUESTION_CHARS,
            "max_sets": agent_services.MAX_SETS,
            "max_file_kb": agent_services.MAX_FILE_BYTES // 1024, **extra}


def _list_page(request: HttpRequest, form: TestSetForm | None = None,
               status: int = 200) -> HttpResponse:
    sets = list(request.actor.read(agent_selectors.agent_test_set_list))
    return render(request, "dashboard/agent_tests.html",
                  _context(sets=sets, form=mark_invalid(form or TestSetForm())), status=status)


def _set_page(request: HttpRequest, test_set, form: TestSetForm | None = None,
              status: int = 200) -> HttpResponse:
    form = form or TestSetForm(with_file=False, auto_id="edit_%s", initial={
        "name": test_set.name,
        "questions": agent_services.questions_as_text(test_set.questions)})
    run = test_set.last_run
    return render(request, "dashboard/agent_test_set.html",
                  _context(test_set=test_set, run=run, form=mark_invalid(form),
                           finished=parse_timestamp(run["finished_at"]) if run else None),
                  status=status)


def _saved(request: HttpRequest, form: TestSetForm, save) -> object | None:
    """The set ``save(name, questions)`` wrote; None with the refusal on the form."""
    if not form.is_valid():
        return None
    try:
        return save(form.cleaned_data["name"], form.read_questions())
    except ServiceError as exc:
        refuse_on_form(form, exc)
        return None


@dashboard_view(manage=True)
def agent_tests(request: HttpRequest) -> HttpResponse:
    return _list_page(request)


@require_POST
@dashboard_view(manage=True)
def agent_test_create(request: HttpRequest) -> HttpResponse:
    form = TestSetForm(request.POST, request.FILES)
    created = _saved(request, form, lambda name, questions: request.actor.write(
        agent_services.agent_test_set_create, name=name, questions=questions))
    if created is None:
        return _list_page(request, form, status=400)
    count = created.question_count
    messages.success(request, f"Saved “{created.name}” with {count} question"
                              f"{'' if count == 1 else 's'}. Run it to see the answers.")
    return redirect("dashboard:agent-test", created.pk)


@dashboard_view(manage=True)
def agent_test(request: HttpRequest, test_set_id: str) -> HttpResponse:
    return _set_page(request, _test_set(request, test_set_id))


@require_POST
@dashboard_view(manage=True)
def agent_test_update(request: HttpRequest, test_set_id: str) -> HttpResponse:
    test_set = _test_set(request, test_set_id)
    form = TestSetForm(request.POST, with_file=False, auto_id="edit_%s")
    saved = _saved(request, form, lambda name, questions: agent_services.agent_test_set_update(
        test_set=test_set, name=name, questions=questions))
    if saved is None:
        return _set_page(request, test_set, form, status=400)
    messages.success(request, f"Saved “{saved.name}”. Run it again to see the answers to the "
                              "questions as they are now.")
    return redirect("dashboard:agent-test", saved.pk)


@require_POST
@dashboard_view(manage=True)
def agent_test_run(request: HttpRequest, test_set_id: str) -> HttpResponse:
    test_set = _test_set(request, test_set_id)
    attempt(request, lambda: agent_services.agent_test_set_run_start(test_set=test_set),
            f"Running “{test_set.name}”: the answers show below as soon as the questions "
            "are asked.")
    return redirect(reverse("dashboard:agent-test", args=[test_set.pk]) + "#run")


@require_POST
@dashboard_view(manage=True)
def agent_test_delete(request: HttpRequest, test_set_id: str) -> HttpResponse:
    test_set = _test_set(request, test_set_id)
    attempt(request, lambda: agent_services.agent_test_set_delete(test_set=test_set),
            f"Deleted “{test_set.name}”.")
    return redirect("dashboard:agent-tests")
