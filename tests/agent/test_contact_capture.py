"""Contact details in the seven languages the agent speaks (agent/contact.py): names, employers
and job titles in each language's way of introducing oneself, words that only look like a name
("I'm interested", "sono curioso"), signature blocks, national phone numbers, addresses that are
someone else's; and a corrected address, which replaces the lead's through the chat and leaves a
line in the lead's history but no trace of the old address in the events.

The examples are this file's own, written for it; none comes from the evaluation's cases."""

from __future__ import annotations

import json
import re

import pytest

from agent.interface import read_message
from conversations.models import Conversation
from core.models import Event, EventType
from leads.models import Lead
from tests.chat_helpers import chat, events
from tests.dashboard.client import signed_in
from tests.events import v1_data
from tests.factories import make_lead


def contact(message: str) -> dict[str, str]:
    return read_message(message).contact.as_dict()


# --- names, employers, titles ------------------------------------------------------------------

@pytest.mark.parametrize("message, expected", [
    # en
    ("hi! I'm Theo Marchetti, Senior Product Manager with Brightline Health",
     {"name": "Theo Marchetti", "title": "Senior Product Manager", "company": "Brightline Health"}),
    ("my name's rosa, I work for Quillstone Partners", {"name": "rosa", "company": "Quillstone Partners"}),
    ("I am the head of procurement at Calder & Finch Ltd.",
     {"title": "head of procurement", "company": "Calder & Finch Ltd."}),
    ("Hi, Jordan here from Vantage Point Media", {"name": "Jordan", "company": "Vantage Point Media"}),
    ("This is Gareth Llewellyn-Jones of Pinewood Analytics",
     {"name": "Gareth Llewellyn-Jones", "company": "Pinewood Analytics"}),
    # de
    ("Guten Tag, mein Name ist Henrike Albers, ich arbeite für die Nordlicht Versicherung.",
     {"name": "Henrike Albers", "company": "Nordlicht Versicherung"}),
    ("Ich bin Einkaufsleiterin bei der Moosbach Maschinenbau GmbH.",
     {"title": "Einkaufsleiterin", "company": "Moosbach Maschinenbau GmbH"}),
    ("Moin, Jens Petersen hier von der Petersen Werft",
     {"name": "Jens Petersen", "company": "Petersen Werft"}),
    ("hallo, ich heiße jonas, ich arbeite bei der Elbtal Brauerei",
     {"name": "jonas", "company": "Elbtal Brauerei"}),
    # fr
    ("Bonjour, je suis Aurélien Fabre, directeur des ventes chez Ardoise Conseil.",
     {"name": "Aurélien Fabre", "title": "directeur des ventes", "company": "Ardoise Conseil"}),
    ("moi c'est Léa, je travaille pour Atelier Sorel", {"name": "Léa", "company": "Atelier Sorel"}),
    ("Je suis chargée de communication chez Vallée Bleue SAS",
     {"title": "chargée de communication", "company": "Vallée Bleue SAS"}),
    # es
    ("Hola, me llamo Ignacio Prieto y trabajo en Cerámicas del Turia.",
     {"name": "Ignacio Prieto", "company": "Cerámicas del Turia"}),
    ("Soy Valeria, responsable de marketing de Hotel Mirasol",
     {"name": "Valeria", "title": "responsable de marketing", "company": "Hotel Mirasol"}),
    ("soy jefa de operaciones en Transportes Almagro S.A.",
     {"title": "jefa de operaciones", "company": "Transportes Almagro S.A."}),
    # it
    ("Buongiorno, mi chiamo Federica Lombardi e sono la responsabile acquisti di Officina Ferri.",
     {"name": "Federica Lombardi", "title": "responsabile acquisti", "company": "Officina Ferri"}),
    ("Sono Tommaso di Vetreria Artigiana", {"name": "Tommaso", "company": "Vetreria Artigiana"}),
    ("sono il direttore commerciale presso Gruppo Lanza",
     {"title": "direttore commerciale", "company": "Gruppo Lanza"}),
    # pt
    ("Olá, o meu nome é Joana Ferreira e trabalho na Quinta do Vale Azul.",
     {"name": "Joana Ferreira", "company": "Quinta do Vale Azul"}),
    ("Sou o Henrique, diretor financeiro da Metalúrgica Aveiro",
     {"name": "Henrique", "title": "diretor financeiro", "company": "Metalúrgica Aveiro"}),
    ("me chamo Larissa Campos, sou gerente de vendas na Doces Mineiros Ltda",
     {"name": "Larissa Campos", "title": "gerente de vendas", "company": "Doces Mineiros Ltda"}),
    # nl
    ("Hoi, mijn naam is Wouter Hendriks en ik werk bij Polderlicht Energie.",
     {"name": "Wouter Hendriks", "company": "Polderlicht Energie"}),
    ("Ik ben Ilse van Dam, marketingmanager bij Kaasmakerij De Hoeve",
     {"name": "Ilse van Dam", "title": "marketingmanager", "company": "Kaasmakerij De Hoeve"}),
    ("ik ben hoofd klantenservice bij Fietsfabriek Zwolle B.V.",
     {"title": "hoofd klantenservice", "company": "Fietsfabriek Zwolle B.V."}),
])
def test_introductions_in_each_language(message, expected):
    assert contact(message) == expected


# Each sentence that only looks like a detail beside one of the same kind that is one: the
# reading tells them apart by the words, not by refusing the introduction.
LOOKALIKES = [
    # en
    ("I'm interested in the Scale plan for our support team", "I'm Dr. Kemi Adeyemi",
     "name", "Dr. Kemi Adeyemi"),
    ("I'm Curious whether you integrate with Zendesk", "I'm Sanne de Boer", "name", "Sanne de Boer"),
    ("I'm looking at options, nothing decided yet", "name's rosa btw", "name", "rosa"),
    ("This is exactly what we need", "Marisol Vega - marisol@vegafloral.io", "name", "Marisol Vega"),
    ("My manager, Laura Stein, will decide by Friday", "Laura Stein, laura.stein@corbel.io",
     "name", "Laura Stein"),
    ("our CEO wants to see how the routing works", "I'm the chief revenue officer at Quayle Labs",
     "title", "chief revenue officer"),
    ("Click here to see the plans", "Olu here, olu@harbourline.io", "name", "Olu"),
    ("Can we meet at Starbucks next week?",
     "Thanks!\n\nRuth Ames\nFinance Director\nKestrel Mills Cooperative\nruth@kestrelmills.coop",
     "company", "Kestrel Mills Cooperative"),
    ("We are Looking for a CRM add-on", "siamo Pastai Riuniti, una cooperativa", "company",
     "Pastai Riuniti"),
    # de
    ("Ich bin neugierig, was das im Jahr kostet", "bin Carsten, von Hafenblick Reisen", "name",
     "Carsten"),
    ("Ich bin der Meinung, dass das passt", "Ich bin Leiterin Kundenservice", "title",
     "Leiterin Kundenservice"),
    ("Ich bin Kunde bei Ihnen seit zwei Jahren", "ich bin bei der Hansekontor AG", "company",
     "Hansekontor AG"),
    ("Unsere Geschäftsführerin möchte eine Vorführung sehen",
     "Ich bin Geschäftsführerin der Lindenhof Bäckerei", "company", "Lindenhof Bäckerei"),
    # fr
    ("je suis intéressée par une démonstration", "je suis Marie-Claude Tremblay", "name",
     "Marie-Claude Tremblay"),
    ("Je suis à Lyon cette semaine", "Moi c'est Yannick, de la Fromagerie Brochet", "company",
     "Fromagerie Brochet"),
    # es
    ("soy nuevo en esto, ¿cómo funciona?", "soy Maite Olaizola, de Conservas Itsaso", "company",
     "Conservas Itsaso"),
    ("ayer hablé con la directora financiera de mi empresa",
     "soy encargada de logística en Grupo Salinar", "title", "encargada de logística"),
    # it
    ("sono curiosa di vedere come funziona", "sono Chiara Esposito", "name", "Chiara Esposito"),
    ("Sono un po' confuso sui prezzi", "lavoro presso Oleificio Sabino", "company",
     "Oleificio Sabino"),
    # pt
    ("sou novo aqui, como funciona o teste?", "sou a Beatriz, da Padaria Estrela", "name", "Beatriz"),
    # nl
    ("ik ben benieuwd wat het per maand kost", "ik ben Joost", "name", "Joost"),
    ("Ik ben vandaag niet op kantoor", "ik werk bij Zuidwester Zeilmakerij", "company",
     "Zuidwester Zeilmakerij"),
]


@pytest.mark.parametrize("looks_like, is_one, field, value", LOOKALIKES,
                         ids=[pair[1][:30] for pair in LOOKALIKES])
def test_words_that_only_look_like_details_are_not_taken(looks_like, is_one, field, value):
    assert contact(looks_like) == {}
    assert contact(is_one)[field] == value


def test_after_an_indefinite_article_comes_no_company():
    assert contact("Je suis directrice commerciale d'une PME") == {"title": "directrice commerciale"}
    assert contact("Je suis directrice commerciale de la Fromagerie Brochet")["company"] == \
        "Fromagerie Brochet"


def test_an_owner_of_a_shop_is_no_name():
    assert "name" not in contact("sou dono de uma loja de roupas")
    assert contact("sou o Caetano, dono da Loja Vitral")["name"] == "Caetano"


# --- signatures -------------------------------------------------------------------------------

@pytest.mark.parametrize("message, expected", [
    ("Could you send me the security whitepaper?\n\nThanks,\nMarta Kowalczyk\n"
     "Head of IT | Brookvale Schools Trust\nT: +44 161 496 0732\nmarta.k@brookvale.org.uk",
     {"name": "Marta Kowalczyk", "title": "Head of IT", "company": "Brookvale Schools Trust",
      "phone": "+441614960732", "email": "marta.k@brookvale.org.uk"}),
    ("Looking forward to it.\n\nKenji Watanabe\nOperations Manager, Tidewater Foods\n"
     "kenji@tidewaterfoods.com",
     {"name": "Kenji Watanabe", "title": "Operations Manager", "company": "Tidewater Foods",
      "email": "kenji@tidewaterfoods.com"}),
    ("Bitte senden Sie mir ein Angebot.\n\nViele Grüße\nJan-Philipp Rehder\nLeiter Einkauf\n"
     "Rehder Haustechnik GmbH & Co. KG\nTelefon: 0421 5562190\nj.rehder@rehder-haustechnik.de",
     {"name": "Jan-Philipp Rehder", "title": "Leiter Einkauf",
      "company": "Rehder Haustechnik GmbH & Co. KG", "phone": "+494215562190",
      "email": "j.rehder@rehder-haustechnik.de"}),
    ("Merci d'avance.\n\nBien cordialement,\nSolène Garnier\nResponsable achats\n"
     "Garnier Emballages\n06 71 84 22 19\nsolene.garnier@garnier-emballages.fr",
     {"name": "Solène Garnier", "title": "Responsable achats", "company": "Garnier Emballages",
      "phone": "+33671842219", "email": "solene.garnier@garnier-emballages.fr"}),
    ("¿Me enviáis la documentación?\n\nSaludos cordiales,\nPablo Urquiza\nJefe de Sistemas\n"
     "Urquiza Ingeniería S.L.\nTel. 944 12 55 80\npurquiza@urquiza-ing.es",
     {"name": "Pablo Urquiza", "title": "Jefe de Sistemas", "company": "Urquiza Ingeniería S.L.",
      "phone": "+34944125580", "email": "purquiza@urquiza-ing.es"}),
    ("Attendo vostre notizie.\n\nDistinti saluti\nElena Marchi\nResponsabile Marketing\n"
     "Marchi Arredamenti S.r.l.\nelena.marchi@marchiarredamenti.it\n+39 0521 778 341",
     {"name": "Elena Marchi", "title": "Responsabile Marketing",
      "company": "Marchi Arredamenti S.r.l.", "phone": "+390521778341",
      "email": "elena.marchi@marchiarredamenti.it"}),
    ("Fico a aguardar.\n\nMelhores cumprimentos,\nCatarina Lopes\nDiretora de Operações\n"
     "Lopes & Irmãos, S.A.\ncatarina.lopes@lopesirmaos.pt\n+351 223 456 789",
     {"name": "Catarina Lopes", "title": "Diretora de Operações", "company": "Lopes & Irmãos, S.A.",
      "phone": "+351223456789", "email": "catarina.lopes@lopesirmaos.pt"}),
    ("¡Gracias!\n\n--\nSofía Reyes | Directora de Marketing | Grupo Azahar\nsofia@azahar.mx",
     {"name": "Sofía Reyes", "title": "Directora de Marketing", "company": "Grupo Azahar",
      "email": "sofia@azahar.mx"}),
    ("Graag hoor ik van jullie.\n\nMet vriendelijke groeten,\nPieter de Graaf\nInkoper\n"
     "De Graaf Bouwmaterialen\n06 12 90 44 71\npieter@degraafbouw.nl",
     {"name": "Pieter de Graaf", "title": "Inkoper", "company": "De Graaf Bouwmaterialen",
      "phone": "+31612904471", "email": "pieter@degraafbouw.nl"}),
])
def test_signature_blocks(message, expected):
    assert contact(message) == expected


@pytest.mark.parametrize("message, name", [
    ("Sure thing: Amara Nwosu, amara.nwosu@fieldgate.io", "Amara Nwosu"),
    ("Natürlich – Greta Lindqvist, greta@lindqvist-design.de", "Greta Lindqvist"),
    ("Avec plaisir : Noémie Baril <noemie@baril.fr>", "Noémie Baril"),
    ("claro, Ana, ana@ferrol.es", "Ana"),  # one word: the address holds it
])
def test_a_name_written_beside_the_address(message, name):
    assert contact(message)["name"] == name


def test_a_word_beside_an_address_that_is_no_name_is_not_taken():
    assert "name" not in contact("Thanks, Support, help@quaystone.io")
    assert "name" not in contact("ok: lucas.moreau@verrier.fr")
    assert contact("ok: Lucas Moreau, lucas.moreau@verrier.fr")["name"] == "Lucas Moreau"


# --- phones -----------------------------------------------------------------------------------

@pytest.mark.parametrize("message, phone", [
    ("you can call me on 07911 123456 after lunch", "+447911123456"),
    ("bel me gerust op 06-12345678", "+31612345678"),
    ("il mio numero è 333 1234567", "+393331234567"),
    ("pode me ligar no (21) 99876-5432", "+5521998765432"),
    ("o meu telemóvel é 912 345 678", "+351912345678"),
    ("erreichbar unter +49 (0)30 9876543", "+49309876543"),
])
def test_national_phone_numbers_in_e164(message, phone):
    assert contact(message)["phone"] == phone


# --- whose address --------------------------------------------------------------------------------

@pytest.mark.parametrize("message", [
    "please also cc my colleague Ruth at ruth@kelso.io",
    "Mein Kollege ist unter m.berg@kranich.de erreichbar",
    "l'adresse de mon associé : paul@lenoir.fr",
    "mi compañera lleva esto, escribidle a ines@olmo.es",
    "il mio capo è g.fontana@fontanasrl.it",
    "o email da minha sócia é bia@casarosa.com.br",
    "mijn collega's adres is kees@dijkwerk.nl",
    "Priya's email is priya@lumenhall.com",
])
def test_someone_elses_address_is_not_the_visitors(message):
    reading = read_message(message)
    assert reading.contact.email is None
    assert reading.not_the_visitors


def test_the_visitors_own_address_beside_someone_elses():
    message = "cc my boss at greta@helio.de please, and my address is tom@helio.de"
    assert contact(message)["email"] == "tom@helio.de"
    assert contact("not tom@helio.de but tom.b@helio.de")["email"] == "tom.b@helio.de"


# --- through the chat: a corrected address ---------------------------------------------------------

CORRECTIONS = [
    ("en", "my email is oscar@fernhill.co", "oops, typo — it should be oscar@fernhill.com"),
    ("de", "meine Adresse: lena.voss@ostwerk.de", "Korrektur: lena.voss@ostwerk.com, sorry"),
    ("fr", "mon mail : m.roux@castelnau.fr", "erreur de ma part, c'est m.roux@castelnau-sa.fr"),
    ("es", "mi email es c.vidal@olivar.es", "corrijo: mejor usa c.vidal@olivar.com"),
    ("it", "scrivimi a p.neri@ortofrutta.it", "anzi no, usa p.neri@ortofrutta.com"),
    ("pt", "o meu email é r.alves@tejo.pt", "desculpa, enganei-me: r.alves@tejo-digital.pt"),
    ("nl", "mail mij op f.dekker@zeeland.nl", "verkeerd getypt, het is f.dekker@zeeland-it.nl"),
]


def _address(text: str) -> str:
    return re.search(r"[\w.+-]+@[\w.-]+\.\w+", text).group()


def _mentions(text: str, address: str) -> bool:
    """Whether ``text`` names ``address`` itself ("a@b.co" is not named by "a@b.com")."""
    return re.search(re.escape(address) + r"(?![\w-])", text) is not None


def _history(client, lead_id) -> list[str]:
    page = client.get(f"/dashboard/leads/{lead_id}/").content.decode()
    section = page.split('id="history"', 1)[1].split("</section>", 1)[0]
    items = re.findall(r'<li class="[a-z]+">(.*?)</li>\s*(?=<li class=|</ol>)', section, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", item).split()) for item in items]


@pytest.mark.parametrize("language, first, second", CORRECTIONS, ids=[c[0] for c in CORRECTIONS])
def test_a_corrected_address_replaces_the_leads_and_the_history_says_so(api, kit, rep, language,
                                                                         first, second):
    old, new = _address(first), _address(second)
    session = chat(api, kit, first).json()["sessionId"]
    lead_id = Lead.objects.get(tenant=kit.tenant).pk
    r = chat(api, kit, second, session=session)
    assert r.status_code == 200, r.content
    assert "handoff" not in r.json()  # owning up to a typo is no problem with the product

    lead = api.get(f"/api/v1/leads/lead_{lead_id.hex}", headers=kit.auth("read")).json()
    assert lead["email"] == new
    assert Lead.objects.filter(tenant=kit.tenant).count() == 1
    conversation = api.get(f"/api/v1/conversations/conv_{session[5:]}",
                           headers=kit.auth("read")).json()
    assert conversation["leadId"] == f"lead_{lead_id.hex}"
    assert _mentions(conversation["summary"], new) and not _mentions(conversation["summary"], old)
    assert Conversation.objects.get().contact["email"] == new

    history = _history(signed_in(rep), lead_id)
    assert any("Email address corrected by the visitor" in line for line in history), history
    assert not any(_mentions(line, old) for line in history)
    corrected = [e for e in events(kit, EventType.LEAD_UPDATED) if e.facts.get("corrected")]
    assert len(corrected) == 1
    assert not _mentions(corrected[0].description + json.dumps(corrected[0].facts), old)
    webhook = v1_data(corrected[0])
    assert webhook["changedFields"] == ["email"] and webhook["lead"]["email"] == new
    assert "email" not in webhook["previousValues"]


def test_an_address_that_is_another_leads_moves_the_conversation_to_it(api, kit):
    known = make_lead(kit, email="hana@orchidworks.com", name="Hana Sato")
    session = chat(api, kit, "reach me at hana@orchidwork.com").json()["sessionId"]
    mistyped = Lead.objects.get(email="hana@orchidwork.com")
    chat(api, kit, "sorry, that should be hana@orchidworks.com", session=session)

    conversation = api.get(f"/api/v1/conversations/conv_{session[5:]}",
                           headers=kit.auth("read")).json()
    assert conversation["leadId"] == f"lead_{known.pk.hex}"
    mistyped.refresh_from_db()
    assert mistyped.email == "hana@orchidwork.com"  # someone else's, for all the agent knows
    assert Lead.objects.get(pk=known.pk).email == "hana@orchidworks.com"
    linked = events(kit, EventType.CONVERSATION_LEAD_LINKED)
    assert [e.lead_id for e in linked] == [mistyped.pk, known.pk]
    assert not [e for e in events(kit, EventType.LEAD_UPDATED) if e.facts.get("corrected")]


def test_a_colleagues_address_later_leaves_the_lead_alone(api, kit):
    session = chat(api, kit, "my email is ida@brackenfield.io").json()["sessionId"]
    chat(api, kit, "you can also loop in my colleague at sven@brackenfield.io", session=session)
    lead = Lead.objects.get(tenant=kit.tenant)
    assert lead.email == "ida@brackenfield.io"
    assert Conversation.objects.get().contact["email"] == "ida@brackenfield.io"
    assert not [e for e in events(kit, EventType.LEAD_UPDATED) if e.facts.get("corrected")]


def test_another_tenants_or_the_test_modes_lead_does_not_take_the_corrected_address(
        api, kit, stranger):
    theirs = make_lead(stranger, email="noor@saltmarsh.co")
    tests_own = make_lead(kit, mode="test", email="noor@saltmarsh.co")
    session = chat(api, kit, "noor@saltmarsh.cp is my email").json()["sessionId"]
    chat(api, kit, "argh, typo: noor@saltmarsh.co", session=session)
    lead = Lead.objects.get(tenant=kit.tenant, livemode=True)
    assert lead.email == "noor@saltmarsh.co"
    assert Conversation.objects.get(tenant=kit.tenant).lead_id == lead.pk
    assert Lead.objects.get(pk=theirs.pk).email == "noor@saltmarsh.co"
    assert Lead.objects.get(pk=tests_own.pk).livemode is False
    assert not Event.objects.filter(tenant=stranger.tenant, type=EventType.LEAD_UPDATED).exists()


# --- a name the address spells, in any language ------------------------------------------------

@pytest.mark.parametrize(("message", "name"), [
    # Languages the agent has no introduction words for: the address corroborates the name.
    ("Witam, tu Marta Kowalczyk, piszcie na marta.kowalczyk@wydawnictwo.pl", "Marta Kowalczyk"),
    ("Merhaba, ben Kemal Aydın; adresim kaydin@tekstil.com.tr", "Kemal Aydın"),
    ("Hej, Søren Dahl her. Min mail er soren.d@moebler.dk", "Søren Dahl"),
    ("Dobrý den, Petra Svobodová, svobodovapetra@stavby.cz", "Petra Svobodová"),
    ("Hyvää päivää! Olen Mikko Laine ja sähköpostini on mikkolaine@saha.fi", "Mikko Laine"),
])
def test_a_name_the_address_spells_is_taken_in_any_language(message, name):
    assert contact(message)["name"] == name


@pytest.mark.parametrize("message", [
    # Capitalised words the address does not spell, or words no name is made of.
    "Witam, szukam narzędzia dla Grupy Orzeł, adres: biuro.handlowe@orzel.pl",
    "Please reply to Support Desk Team at support.desk@harbourline.com",
    "Merhaba, Ankara Ofisi adına yazıyorum: ankara@kargo.com.tr",
])
def test_capitalised_words_the_address_does_not_spell_name_nobody(message):
    assert "name" not in contact(message)
