"""Deterministic reading of visitor messages: intent, buying signals, and the contact details
that ``agent.contact`` reads (the language is ``core.languages.detect_language``).

The builtin provider answers from these alone; the OpenAI provider's analysis is merged with
them, so that a detail the model misses (an email address in passing) is still caught.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .contact import EMAIL, PHONE, extract_contact, not_the_visitors
from .types import Contact

__all__ = ["EMAIL", "PHONE", "Reading", "classify", "detect_signals", "extract_contact", "read",
           "said_by_visitor"]

SLOT_TOKEN = re.compile(r"\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z)\b")

DECISION_TITLES = re.compile(
    r"\b(ceo|cto|cfo|coo|cmo|cro|cio|pdg|founder|co-founder|owner|president|vp|vice president|head|director|"
    r"gesch[äa]ftsf[üu]hrer(?:in)?|inhaber(?:in)?|gr[üu]nder(?:in)?|directeur|directrice|fondateur|fondatrice|"
    r"directora|fundador|fundadora|gerente)\b",
    re.IGNORECASE,
)


def _words(*items: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(items) + r")\b", re.IGNORECASE)


# Someone the visitor may ask for: a person of the tenant's staff, however named.
_SOMEONE = (r"(?:a |an |some |one of your |your |a real |an actual |a live |the )?"
            r"(?:real |actual |live )?(?:human|humans|person|someone|somebody|anyone|agent|rep|representative|"
            r"operator|sales(?: ?(?:person|rep|team|people))?|salesperson|team|member of (?:your|the) team|colleague|"
            r"consultant|people)")
# Dutch: "ik wil graag", "kan ik", "mogen we even": the visitor's own wish, not what others can do.
_NL_WE_WISH = (r"(?:(?:ik|we|wij) (?:wil|wilde|zou|kan|mag|willen|zouden|kunnen|mogen)|"
               r"(?:kan|mag|wil|zou|kunnen|mogen|willen|zouden) (?:ik|we|wij))"
               r"(?: (?:graag|even|liever|alstublieft|nu|misschien|toch|eigenlijk|ook))*")
_NL_SOMEONE = (r"(?:iemand|een (?:echte |echt )?(?:medewerker|mens|persoon|adviseur|verkoper|collega|"
               r"vertegenwoordiger))(?: van (?:uw|jullie|het) (?:team|verkoop\w*|sales|klantenservice))?")
# Asking for a person, directly or not, in the agent's languages. A request is the visitor's own
# ("can I talk to…", "let me speak with…", "get me a human", "call me back"): a sentence that
# merely mentions people ("our customers can talk to a real person", "does the bot hand off to
# a human agent?", "our sales team is 5 people") is not one.
HUMAN_REQUEST = _words(
    # en: I want / can I / let me … talk to someone
    rf"(?:i|we)(?:'d| would)? (?:like|want|need|prefer|wish|have)(?: to)? (?:talk|speak|chat|discuss (?:this|it|that)) (?:to|with) {_SOMEONE}",
    rf"(?:can|could|may) (?:i|we) (?:please )?(?:talk|speak|chat) (?:to|with) {_SOMEONE}",
    rf"let (?:me|us) (?:talk|speak|chat) (?:to|with) {_SOMEONE}",
    rf"(?:put|get|connect|transfer|pass) me (?:through )?(?:to|with) {_SOMEONE}",
    r"get me (?:a |an )?(?:real |actual |live )?(?:human|person|agent|rep|representative|someone|somebody)",
    r"(?:i|we) (?:need|want|'d like|would like|prefer) (?:an? )?(?:actual|real|live) (?:human|person|agent)",
    r"is there (?:a |an |any )?(?:real |actual |live )?(?:human|person|one|body|agent|rep)\w* (?:i|we) can",
    r"(?:human|person|agent|representative|operator),? please",
    # en: a call back
    r"(?:can|could|would|will|please|pls) (?:have )?(?:someone|somebody|anyone|a (?:person|human|rep|sales ?rep|salesperson|representative|consultant)|one of your \w+)(?: from (?:sales|your (?:sales )?team))? (?:call|phone|ring|contact|reach out to|get in touch with|email) (?:me|us)",
    r"have (?:someone|somebody|a (?:sales ?)?rep|a salesperson|a person)(?: from (?:sales|your team))? (?:call|contact|email|reach out to) (?:me|us)",
    r"call me back", r"give me a call", r"request a call ?back",
    # en: the bot does not help
    r"(?:this|the|you|your) (?:bot|chatbot|chat bot|assistant|ai|thing)(?: is| are|'re)? (?:useless|stupid|dumb|pointless|terrible|not helping|no help)",
    r"you(?:'re| are) (?:useless|not helping|no help)", r"(?:useless|stupid|dumb) (?:bot|chatbot|ai)",
    r"(?:you're|you are) not answering my question", r"(?:that|this) (?:doesn't|does not|didn't|did not) answer my question",
    # de
    r"mit (?:einem|einer|jemandem|einem echten|einer echten|einem richtigen|einer richtigen)(?: \w+)? (?:mitarbeiter\w*|menschen|person|berater\w*|verkäufer\w*|vertrieb\w*|ansprechpartner\w*|kollegen|kollegin) (?:sprechen|reden)",
    r"(?:mit )?jemandem (?:aus|von) (?:ihrem|eurem|dem) (?:team|vertrieb\w*) (?:sprechen|reden)",
    r"(?:mich|uns) (?:bitte )?zurückrufen", r"(?:um|einen) rückruf", r"rückruf,? bitte", r"rufen sie mich (?:bitte )?an",
    r"ruft mich (?:bitte )?an",
    r"(?:dieser|der|du) (?:bot|chatbot|assistent) (?:ist|bist) (?:nutzlos|sinnlos|keine hilfe)",
    # fr
    r"(?:voudrais|veux|voulons|souhaite|souhaiterais|aimerais|puis-je|pourrais-je|peux-je) (?:parler|discuter) (?:à|avec) (?:un |une |quelqu'un|un vrai |une vraie |votre |vos )",
    r"(?:me|nous) (?:faire )?rappeler", r"rappelez-moi", r"appelez-moi", r"un (?:vrai )?humain,? s'il vous plaît",
    r"(?:ce|le) (?:bot|chatbot|robot) (?:est|ne sert à) (?:inutile|rien)",
    # es
    r"(?:quiero|quisiera|necesito|me gustaría|puedo|podría) hablar con (?:una persona|un humano|un agente|alguien|un asesor|un vendedor|ventas|un representante|una persona real)",
    r"(?:me|nos) (?:puede|pueden|podría|podrían) llamar", r"(?:puede|pueden|podría|podrían) llamarme", r"llámenme",
    r"llámeme",
    r"(?:este|el) (?:bot|chatbot) (?:es|no sirve) (?:inútil|para nada)",
    # it
    r"(?:vorrei|voglio|posso|potrei|vorremmo|possiamo|preferirei) (?:parlare|chattare) con (?:una persona|un operatore|un'operatrice|un consulente|una consulente|qualcuno|un umano|un essere umano|un commerciale|un venditore|un agente|un vostro|una vostra|il vostro team|il reparto vendite)",
    r"(?:mi|ci) (?:può|potete|potreste|potrebbe) (?:richiamare|telefonare)", r"richiamatemi",
    r"mi richiami",
    # pt
    r"(?:quero|queria|gostaria de|posso|podia|poderia|preciso de|prefiro) (?:falar|conversar) com (?:uma pessoa|um humano|um ser humano|alguém|um assistente|um consultor|uma consultora|um vendedor|um comercial|um operador|um representante|um atendente|a vossa equipa|a sua equipa|a equipa)",
    r"(?:pode|podem|podia|podiam|poderia|poderiam) ligar-me", r"(?:me|nos) (?:pode|podem|podia|podiam|poderia|poderiam) ligar",
    r"(?:pode|podem|podia|podiam|poderia|poderiam) me ligar", r"liguem-me", r"ligue-me",
    # nl: "kan ik met een medewerker spreken", "ik wil graag iemand spreken", "bel me terug"
    rf"{_NL_WE_WISH} (?:met )?{_NL_SOMEONE} (?:spreken|praten|bellen)",
    r"(?:kunt|kan|wilt|wil|zou|zouden|kunnen|willen) (?:u|je|jij|jullie) (?:mij|me|ons)(?: [^\W\d_]+){0,3}? (?:terug)?bellen",
    r"belt? (?:u |jullie )?(?:mij|me|ons) (?:even )?terug", r"terugbelverzoek",
)
# A message that is nothing but the request: "agent", "Human please!".
HUMAN_REQUEST = re.compile(
    HUMAN_REQUEST.pattern + r"|^\W*(?:human|agent|representative|operator|real person)(?: please)?\W*$",
    re.IGNORECASE)
# A problem with the product the visitor already uses: support's, not sales'.
SUPPORT_PROBLEM = _words(
    # "my error", "erreur de frappe", "mein Fehler": a typo owned up to, no problem with the product
    r"bug", r"(?<!\bmy )error", r"broken", r"not working", r"doesn't work", r"does not work", r"isn't working",
    r"stopped working", r"won't (?:load|open|start)", r"doesn't (?:open|load)", r"can't log ?in", r"cannot log ?in",
    r"can't sign in", r"issue with my", r"problem with my", r"refund", r"cancel my", r"support ticket", r"outage",
    r"charged (?:me )?twice",
    r"(?<!\bmein )fehler\w*", r"funktioniert (?:nicht|nicht mehr)", r"geht nicht mehr", r"kaputt", r"absturz", r"stürzt ab",
    r"kann mich nicht (?:anmelden|einloggen)",
    r"erreur(?! de (?:frappe|ma part|saisie))", r"ne fonctionne (?:pas|plus)", r"ne marche (?:pas|plus)", r"en panne",
    r"impossible de me connecter",
    r"no funciona", r"no puedo (?:entrar|iniciar sesión|acceder)", r"(?<!\bmi )fallo", r"reembolso",
    r"non funziona(?: più)?", r"non riesco (?:ad? (?:accedere|entrare))", r"errore", r"rimborso",
    r"não funciona", r"deixou de funcionar", r"não consigo (?:entrar|aceder|acessar|iniciar sessão)",
    r"werkt niet(?: meer)?", r"doet het niet(?: meer)?", r"kan niet (?:inloggen|aanmelden)",
    r"foutmelding",
)


# Each intent: its pattern and the confidence a match gives. First match in this order wins,
# so the more specific intents come first.
INTENT_RULES: list[tuple[str, re.Pattern[str], float]] = [
    ("human_request", HUMAN_REQUEST, 0.95),
    ("booking", re.compile(r"\bbook\b.*\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z", re.IGNORECASE), 0.97),
    ("demo_request", _words(r"demo", r"demonstration", r"walkthrough", r"walk-through", r"trial call",
                            r"book (?:a |an )?(?:call|meeting)", r"schedule (?:a |an )?(?:call|meeting|demo)",
                            r"set up (?:a |an )?(?:call|meeting)", r"(?:quick|short|brief|intro|discovery|sales) call",
                            r"(?:hop|jump|get) on a call", r"termin", r"d[ée]mo", r"d[ée]monstration",
                            r"demostración", r"vorführung",
                            r"rendez-vous", r"reunión", r"meeting",
                            r"prenot\w* una (?:chiamata|call|videochiamata|riunione)", r"appuntamento",
                            r"dimostrazione", r"demonstração", r"reunião",
                            r"(?:marcar|agendar) uma (?:chamada|videochamada)", r"afspraak",
                            r"(?:gesprek|belafspraak) (?:in)?plannen"), 0.9),
    ("purchase_intent", _words(r"buy", r"purchase", r"sign up", r"subscribe", r"ready to (?:start|go|move)",
                               r"get started", r"contract", r"procure", r"quote", r"onboard",
                               r"kaufen", r"acheter", r"comprar", r"acquistare", r"kopen"), 0.88),
    ("pricing", _words(r"price", r"prices", r"pricing", r"cost", r"costs", r"how much", r"plans?",
                       r"budget", r"discount", r"per seat", r"per user", r"preis", r"preise", r"kosten",
                       r"kostet", r"wie ?viel", r"prix", r"tarifs?", r"combien", r"coûte",
                       r"precio", r"precios", r"cu[aá]nto", r"cuesta", r"prezzo", r"prezzi",
                       r"quanto costa", r"preço", r"preços", r"quanto custa",
                       r"prijs", r"prijzen", r"wat kost"), 0.85),
    ("support", SUPPORT_PROBLEM, 0.85),
    ("objection", _words(r"too expensive", r"not interested", r"no budget", r"already (?:use|have)",
                         r"competitor", r"not sure (?:it|this)", r"not now", r"maybe later", r"too costly",
                         r"zu teuer", r"trop cher", r"muy caro", r"troppo caro", r"muito caro",
                         r"te duur"), 0.8),
    ("goodbye", _words(r"bye", r"goodbye", r"good bye", r"see you", r"that's all", r"that is all",
                       r"thanks,? that'?s it", r"have a (?:nice|good) day", r"tschüss", r"auf wiedersehen",
                       r"au revoir", r"adiós", r"adios", r"arrivederci", r"buona giornata",
                       r"adeus", r"até logo", r"até à próxima", r"tot ziens", r"doei",
                       r"fijne dag"), 0.9),
    ("product_question", re.compile(
        r"\?|\b(?:how does|how do|what is|what are|does it|do you|can it|can you|is there|integrat\w*|"
        r"feature\w*|support for|works with|wie|was ist|comment|qu'est-ce|cómo|qué es)\b",
        re.IGNORECASE), 0.75),
    ("greeting", _words(r"hi", r"hello", r"hey", r"good (?:morning|afternoon|evening)", r"hallo",
                        r"guten tag", r"bonjour", r"salut", r"hola", r"buenos días", r"ciao",
                        r"salve", r"buongiorno", r"buonasera", r"olá", r"ola", r"bom dia",
                        r"boa tarde", r"hoi", r"goedemorgen", r"goedemiddag", r"goedenavond"), 0.9),
]

# Buying signals (BANT plus interest). Each adds to the score once per conversation.
SIGNAL_RULES: dict[str, re.Pattern[str]] = {
    "budget": _words(r"budget", r"\$\s?\d[\d,.]*k?", r"\d[\d,.]*\s?(?:k|usd|eur|dollars|euros)",
                     r"afford", r"spend", r"allocated", r"approved"),
    "authority": DECISION_TITLES,
    "need": _words(r"we need", r"we're looking for", r"we are looking for", r"looking for a",
                   r"struggl\w+", r"pain", r"problem", r"challenge", r"replace", r"automate",
                   r"improve", r"increase", r"reduce", r"too many leads", r"missing leads"),
    "timeline": _words(r"asap", r"this (?:week|month|quarter|year)", r"next (?:week|month|quarter)",
                       r"within \d+ (?:days|weeks|months)", r"in \d+ (?:days|weeks|months)",
                       r"by (?:january|february|march|april|may|june|july|august|september|october|november|december|q[1-4])",
                       r"q[1-4]", r"urgent(?:ly)?", r"soon", r"immediately", r"deadline"),
    "team_size": re.compile(r"\b\d{1,6}\s?(?:people|employees|users|seats|reps|agents|staff)\b",
                            re.IGNORECASE),
}

INTENT_SIGNALS = {"demo_request": "demo_interest", "purchase_intent": "purchase_intent",
                  "pricing": "pricing_interest", "booking": "demo_interest"}


@dataclass(frozen=True)
class Reading:
    intent: str
    confidence: float
    contact: Contact
    signals: frozenset[str]
    slot_token: str | None
    # Addresses the message gives as someone else's or as wrong: not the visitor's, whoever
    # reads them (agent.contact.not_the_visitors).
    not_the_visitors: frozenset[str] = frozenset()


def said_by_visitor(contact: Contact, text: str) -> Contact:
    """``contact`` (a model's reading) without the fields the visitor never wrote in ``text``:
    an email or a name, company or title whose words are not all there, a phone whose last
    seven digits are not. Small models fill a form's gaps with "john_doe" and "0987654321"."""
    words = set(re.findall(r"[^\W_]+", text.lower()))
    digits = re.sub(r"\D", "", text)

    def written(field: str, value: str | None) -> str | None:
        if not value:
            return None
        if field == "email":
            return value if value.lower() in text.lower() else None
        if field == "phone":
            tail = re.sub(r"\D", "", value)[-7:]
            return value if len(tail) == 7 and tail in digits else None
        tokens = re.findall(r"[^\W_]+|_", value.lower())
        return value if tokens and set(tokens) <= words else None

    return Contact(**{f: written(f, getattr(contact, f)) for f in contact.__dataclass_fields__})


def classify(text: str, contact: Contact | None = None) -> tuple[str, float]:
    """The message's intent and the rules' confidence in it; ``contact``: the message's contact
    details when the caller read them already."""
    for intent, pattern, confidence in INTENT_RULES:
        if pattern.search(text):
            return intent, confidence
    contact = contact if contact is not None else extract_contact(text)
    if contact.email or contact.phone:
        return "contact_info", 0.9
    if contact.name or contact.company:
        return "contact_info", 0.7
    return "other", 0.5


def detect_signals(text: str, intent: str, contact: Contact) -> frozenset[str]:
    found = {name for name, pattern in SIGNAL_RULES.items() if pattern.search(text)}
    if contact.title and DECISION_TITLES.search(contact.title):
        found.add("authority")
    if intent in INTENT_SIGNALS:
        found.add(INTENT_SIGNALS[intent])
    if intent == "product_question":
        found.add("need")
    return frozenset(found)


def read(text: str) -> Reading:
    others = not_the_visitors(text)
    contact = extract_contact(text, others=others)
    intent, confidence = classify(text, contact)
    slot = SLOT_TOKEN.search(text)
    return Reading(intent=intent, confidence=confidence, contact=contact,
                   signals=detect_signals(text, intent, contact),
                   slot_token=slot.group(1) if slot else None, not_the_visitors=others)
