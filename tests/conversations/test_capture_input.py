"""What the chat agent captures goes through the lead rules without failing the turn
(conversations/services/capture.py; docs/conversations.md): an address in another form is the
lead it names, a look-alike of one is no lead at all, and a name or company with a line break in
it is kept on one line. Issue 28, "Look-alike emails" and "Control characters in names"."""

from __future__ import annotations

from conversations.models import Conversation
from leads.models import Lead
from tests.chat_helpers import chat
from tests.factories import make_lead


def test_a_company_typed_over_two_lines_is_kept_on_one(api, kit):
    # The built-in rules read "Umbrella\r\nCorp" as the company: capital words across the break.
    r = chat(api, kit, "I work at Umbrella\r\nCorp, write to sam@umbrella.io")
    assert r.status_code == 200, r.text
    lead = Lead.objects.get()
    assert (lead.email, lead.company) == ("sam@umbrella.io", "Umbrella Corp")


def test_the_models_name_with_a_line_break_is_kept_on_one_line(api, kit, fake):
    fake.analysis = {"intent": "contact_info", "confidence": 0.9,
                     "contact": {"email": "sam@umbrella.io", "name": "Sam\r\nLee",
                                 "title": "CTO\n"}}
    r = chat(api, kit, "I'm Sam\r\nLee, CTO, sam@umbrella.io")
    assert r.status_code == 200, r.text
    lead = Lead.objects.get()
    assert (lead.name, lead.title) == ("Sam Lee", "CTO")


def test_an_address_in_another_form_is_the_lead_it_names(api, kit, fake):
    sam = make_lead(kit, email="sam@example.com", name="Sam")
    fake.analysis = {"intent": "contact_info", "confidence": 0.9,
                     "contact": {"email": "Sam@ＥＸＡＭＰＬＥ.com"}}
    r = chat(api, kit, "It's me again: Sam@ＥＸＡＭＰＬＥ.com")
    assert r.status_code == 200, r.text
    assert Lead.objects.count() == 1
    assert Conversation.objects.get().lead_id == sam.pk


def test_a_look_alike_address_is_no_lead_and_the_turn_goes_on(api, kit, fake):
    make_lead(kit, email="sam@example.com", name="Sam")
    fake.analysis = {"intent": "contact_info", "confidence": 0.9,
                     "contact": {"email": "ſam@example.com", "name": "Sam"}}
    r = chat(api, kit, "I'm Sam, ſam@example.com")
    assert r.status_code == 200, r.text
    assert list(Lead.objects.values_list("email", flat=True)) == ["sam@example.com"]
    assert Conversation.objects.get().lead_id is None
