"""The deterministic reading of visitor messages (agent/rules.py): the net under
every provider, and the whole of the builtin agent's understanding."""

import pytest

from agent import rules


@pytest.mark.parametrize("message", [
    "Can I talk to a real person please?",
    "let me talk to a real person",
    "I'd like to speak with someone on your sales team.",
    "I'd prefer to discuss this with a person, honestly.",
    "Is there a human I can chat with?",
    "agent please",
    "Human!",
    "Am I chatting with a robot? I need an actual human for this.",
    "can someone call me? +1 646 555 0117",
    "Please have a sales rep contact me, jen@corvid.io",
    "Could you give me a call tomorrow?",
    "this bot is useless",
    "This bot is useless, get me a person",
    "You're not answering my question.",
    "Kann ich bitte mit einem Mitarbeiter sprechen?",
    "Ich möchte mit einem echten Menschen reden.",
    "Können Sie mich bitte zurückrufen?",
    "Je voudrais parler à quelqu'un de votre équipe commerciale.",
    "Pouvez-vous me faire rappeler par un conseiller ?",
    "Quiero hablar con una persona, por favor.",
    "¿Me puede llamar alguien de ventas?",
    "Preferirei parlare con una persona del vostro team, grazie.",
    "Mi potete richiamare domani mattina?",
    "Gostaria de falar com alguém da vossa equipa comercial.",
    "Podem ligar-me depois do almoço?",
    "Kan ik even met een medewerker van jullie team praten?",
    "Ik wil graag iemand spreken.",
    "Kunt u mij morgen terugbellen?",
])
def test_requests_for_a_person_direct_or_not(message):
    assert rules.classify(message)[0] == "human_request"


@pytest.mark.parametrize("message", [
    "Our sales team is 5 people and they're drowning in inbound leads.",
    "I am a person who likes to see the numbers before a call.",
    "My manager asked me to look at pricing.",
    "Does the bot hand off to a human agent when it can't answer?",
    "I'm looking for a tool so our customers can talk to a real person faster.",
    "I spoke to someone on your team last week and she mentioned you have an API.",
    "Can your agent talk to our customers in Spanish and German?",
    "Unser Vertriebsteam besteht aus 8 Personen.",
    "Soy una persona que prefiere leer la documentación antes de hablar con ventas.",
    "¿Cómo se puede llamar a la API?",
    "Notre outil permet de rappeler nos clients.",
    "I nostri clienti vogliono parlare con una persona quando il bot non sa rispondere.",
    "Os clientes podem falar com uma pessoa pelo widget?",
    "Onze klanten kunnen met een medewerker spreken via de chat.",
])
def test_sentences_that_mention_people_ask_for_no_one(message):
    assert rules.classify(message)[0] != "human_request"


@pytest.mark.parametrize("message", [
    "Your widget is broken on our site, the chat window doesn't open anymore.",
    "Seit dem Update bekommen wir beim Export einen Fehler.",
    "L'export ne fonctionne plus depuis hier.",
    "No puedo iniciar sesión desde esta mañana.",
    "Da stamattina l'esportazione non funziona più.",
    "Não consigo entrar na minha conta desde ontem.",
    "De koppeling met ons CRM werkt niet meer.",
])
def test_support_problems_in_each_language(message):
    assert rules.classify(message)[0] == "support"


@pytest.mark.parametrize("message", [
    "Could you show me how it works on a quick call sometime this week?",
    "Est-ce qu'on peut organiser une démonstration la semaine prochaine ?",
    "Me gustaría ver una demostración.",
    "Possiamo fissare un appuntamento per giovedì?",
    "Dava para marcar uma reunião na próxima semana?",
    "Kunnen we een afspraak maken om het te bekijken?",
])
def test_meeting_wishes(message):
    assert rules.classify(message)[0] == "demo_request"


@pytest.mark.parametrize("message, intent", [
    ("Buonasera!", "greeting"),
    ("Olá, boa tarde", "greeting"),
    ("Goedemorgen", "greeting"),
    ("Perfetto, grazie. Arrivederci!", "goodbye"),
    ("Obrigada, até à próxima!", "goodbye"),
    ("Helder, bedankt en tot ziens.", "goodbye"),
    ("Quanto costa la licenza annuale?", "pricing"),
    ("Quanto custa por utilizador?", "pricing"),
    ("Wat zijn jullie prijzen voor tien gebruikers?", "pricing"),
    ("Mi sembra troppo caro per noi.", "objection"),
    ("Para nós é muito caro.", "objection"),
    ("Dat is te duur voor ons.", "objection"),
])
def test_greetings_goodbyes_prices_and_objections_in_italian_portuguese_and_dutch(message, intent):
    assert rules.classify(message)[0] == intent


@pytest.mark.parametrize("message, expected", [
    ("Hi, I'm Dana Whitfield, Head of Operations at Northwind Traders.",
     {"name": "Dana Whitfield", "title": "Head of Operations", "company": "Northwind Traders"}),
    ("I'm VP of Sales at Contoso and we have 35 reps.", {"title": "VP of Sales", "company": "Contoso"}),
    ("I'm the CEO of a 40-person agency called Brightside Media.",
     {"title": "CEO", "company": "Brightside Media"}),
    ("We're Fabrikam, a 200-person logistics firm in Ohio.", {"company": "Fabrikam"}),
    ("hey this is jake from acme robotics, jake@acmerobotics.com",
     {"name": "jake", "company": "acme robotics", "email": "jake@acmerobotics.com"}),
    ("Thanks, that helps.\n\nRaj Patel\nCTO, Quantiva\nraj@quantiva.ai",
     {"name": "Raj Patel", "title": "CTO", "company": "Quantiva", "email": "raj@quantiva.ai"}),
    ("Mein Name ist Stefan Krüger, ich bin Geschäftsführer bei Krüger & Söhne.",
     {"name": "Stefan Krüger", "title": "Geschäftsführer", "company": "Krüger & Söhne"}),
    ("Hallo, ich bin Katrin Vogel von Bergmann Logistik GmbH.",
     {"name": "Katrin Vogel", "company": "Bergmann Logistik GmbH"}),
    ("Bonjour, je m'appelle Camille Durand, je travaille chez Lumière Conseil.",
     {"name": "Camille Durand", "company": "Lumière Conseil"}),
    ("Je suis directeur commercial chez Optima Services.",
     {"title": "directeur commercial", "company": "Optima Services"}),
    ("Hola, me llamo Lucía Fernández y soy directora de marketing en Grupo Alba.",
     {"name": "Lucía Fernández", "title": "directora de marketing", "company": "Grupo Alba"}),
])
def test_contact_details_in_many_phrasings_and_languages(message, expected):
    contact = rules.extract_contact(message).as_dict()
    assert contact == expected


@pytest.mark.parametrize("message", [
    "My manager asked me to look at pricing.",
    "Unser Geschäftsführer möchte eine Demo sehen.",
    "Do you integrate with Salesforce? Our sales people live in it.",
    "I am a person who likes to see the numbers before a call.",
])
def test_someone_elses_title_and_a_tools_name_are_not_the_visitors(message):
    assert rules.extract_contact(message).as_dict() == {}


@pytest.mark.parametrize("message, phone", [
    ("My cell is (212) 555-0199", "+12125550199"),
    ("My direct line is +44 20 7946 0958", "+442079460958"),
    ("Können Sie mich bitte zurückrufen? 0171 2345678", "+491712345678"),
    ("Vous pouvez me joindre au 06 12 34 56 78.", "+33612345678"),
    ("Mi teléfono es 612 345 678", "+34612345678"),
    ("Call 0044 20 7946 0958", "+442079460958"),
])
def test_phone_numbers_in_e164(message, phone):
    assert rules.extract_contact(message).phone == phone


def test_a_national_number_of_no_clear_country_is_not_guessed():
    # A North American area code never starts with 0: "+1 0…" would be nobody's number.
    assert rules.extract_contact("my number is 0612345678").phone is None
