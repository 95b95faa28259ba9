"""Knowledge base: the documents with their indexing status, the upload of a file or of pasted
text, and delete. Every write is the ``knowledge.services`` call that ``/api/v1/knowledge-base``
makes, with the API's own reading of an uploaded file (``file_values``): the same checks and
limits, the indexing queued after the commit. The page adds forms and messages. A stored
upload answers with a redirect to the list (POST-redirect-GET), so that a reload shows the list
again instead of uploading the file twice; a refused one shows its form again, with nothing
stored.

Who may do what follows the v1 scopes the way the dashboard translates them elsewhere: the list
(read) and uploads (write, as reps edit leads) are for all the staff; delete (the admin scope,
like webhooks and keys) for managers and the admin token."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from core.errors import ServiceError
from knowledge import selectors as knowledge_selectors
from knowledge import services as knowledge_services
from knowledge.api.uploads import file_values
from knowledge.models import TEXT_TYPES, DocumentStatus, DocumentType

from ..auth import dashboard_view
from .common import attempt, page_of, query_without_page, safe_next

ACCEPT = ".pdf,.docx,.txt,.md,.markdown,application/pdf,text/plain,text/markdown," \
         "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
# Titles and URLs are checked by the service; the attributes only help the browser.
_TITLE = {"maxlength": knowledge_services.MAX_TITLE}
_URL = {"placeholder": "https://acme.example/pricing", "maxlength": knowledge_services.MAX_URL}


class FileUploadForm(forms.Form):
    # An empty file reaches the service, which refuses it as the API does.
    file = forms.FileField(allow_empty_file=True, label="File",
                           error_messages={"required": "Choose a file to upload."},
                           widget=forms.FileInput(attrs={"accept": ACCEPT}))
    title = forms.CharField(required=False, widget=forms.TextInput(attrs=_TITLE),
                            help_text="Optional: the file name without its extension.")
    type = forms.ChoiceField(required=False, choices=[("", "From the file")] + DocumentType.choices)
    url = forms.CharField(required=False, label="Public URL", widget=forms.URLInput(attrs=_URL),
                          help_text="Optional: replies that use the document link to it.")

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "file_%s")
        super().__init__(*args, **kwargs)


class TextUploadForm(forms.Form):
    title = forms.CharField(required=False, widget=forms.TextInput(attrs=_TITLE))
    type = forms.ChoiceField(choices=[(t.value, t.label) for t in TEXT_TYPES],
                             initial=DocumentType.TEXT)
    content = forms.CharField(required=False, strip=False, label="Text",
                              widget=forms.Textarea(attrs={"rows": 8}))
    url = forms.CharField(required=False, label="Public URL", widget=forms.URLInput(attrs=_URL),
                          help_text="Optional: replies that use the document link to it.")

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "text_%s")
        super().__init__(*args, **kwargs)


def _page(request: HttpRequest, *, file_form: FileUploadForm | None = None,
          text_form: TextUploadForm | None = None) -> HttpResponse:
    page = page_of(request, request.actor.read(knowledge_selectors.document_list))
    return render(request, "dashboard/knowledge.html", {
        "section": "knowledge", "page": page, "query": query_without_page(request),
        "file_form": file_form or FileUploadForm(), "text_form": text_form or TextUploadForm(),
        "max_bytes": settings.KNOWLEDGE_MAX_DOCUMENT_BYTES,
        "processing": any(d.status == DocumentStatus.PROCESSING for d in page),
    })


def _refused(form: forms.Form, exc: ServiceError) -> None:
    """The service's refusal on the form: each detail beside its field, the message on top."""
    placed = False
    for detail in exc.details:
        if detail.field in form.fields:
            form.add_error(detail.field, detail.message)
            placed = True
    if not placed or exc.message != type(exc).default_message:
        form.add_error(None, exc.message)


def _create(request: HttpRequest, form: forms.Form, values) -> bool:
    """Uploads through the API's service; True when stored (and queued for indexing)."""
    try:
        document = request.actor.write(knowledge_services.document_create, **values())
    except ServiceError as exc:
        _refused(form, exc)
        return False
    messages.success(request, f"Uploaded “{document.title}” — indexing. Its status below turns "
                              "Ready once the agent can answer from it.")
    return True


@dashboard_view()
def knowledge_index(request: HttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
@dashboard_view()
def knowledge_upload(request: HttpRequest) -> HttpResponse:
    form = FileUploadForm(request.POST, request.FILES)
    if form.is_valid():
        data = form.cleaned_data
        if _create(request, form, lambda: {
                **file_values(data["file"], title=data["title"], type=data["type"]),
                "url": data["url"].strip()}):
            return redirect("dashboard:knowledge")
    return _page(request, file_form=form)


@require_POST
@dashboard_view()
def knowledge_paste(request: HttpRequest) -> HttpResponse:
    form = TextUploadForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        if _create(request, form, lambda: {
                "title": data["title"], "type": data["type"],
                "data": data["content"].encode("utf-8"), "url": data["url"].strip()}):
            return redirect("dashboard:knowledge")
    return _page(request, text_form=form)


@require_POST
@dashboard_view(manage=True)
def knowledge_delete(request: HttpRequest, document_id: str) -> HttpResponse:
    document = request.actor.get(knowledge_selectors.document_get, document_id=document_id)
    attempt(request, lambda: knowledge_services.document_delete(document=document),
            f"Deleted “{document.title}”: the agent no longer answers from it.")
    return redirect(safe_next(request, reverse("dashboard:knowledge")))
