"""Deterministic reading of visitor messages: contact details, intent, buying signals (the
language is ``core.languages.detect_language``).

The builtin provider answers from these alone; the OpenAI provider's analysis is merged with
them, so that a detail the model misses (an email address in passing) is still caught.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .types import Contact

EMAIL = re.compile(r"(?<![\w.+-])([A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})\b")
PHONE = re.compile(r"(?<![\w+])(\+|00)?(\d[\d\s().-]{6,18}\d)(?!\w)")
SLOT_TOKEN = re.compile(r"\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z)\b")

_NAME_WORD = r"[A-Z][a-zA-Z'\-]{1,30}"
NAME = re.compile(
    rf"(?:\bmy name is|\bname's|\bi am|\bi'm|\bthis is|\bje m'appelle|\bich bin|\bich heiße|\bme llamo)\s+"
    rf"({_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}})",
    re.IGNORECASE,
)
COMPANY = re.compile(
    r"(?:\bI work (?:at|for)|\bwe are|\bwe're|\bfrom|\bat|\bcompany is|\bcompany's|\bcompany called|\bwith)\s+"
    r"([A-Z][\w&.\-]*(?:\s+(?:[A-Z][\w&.\-]*|&))*(?:\s+(?:Inc|LLC|Ltd|GmbH|AG|SA|SAS|BV)\.?)?)"
)
TITLE = re.compile(
    r"\b(CEO|CTO|CFO|COO|CMO|CRO|CIO|founder|co-founder|owner|president|"
    r"(?:vp|vice president|head|director|manager|lead)(?: of [a-z]+(?: [a-z]+)?)?)\b",
    re.IGNORECASE,
)
# Words that look like names after "I am"/"I'm" but are not.
_NOT_NAMES = {
    "interested", "looking", "trying", "not", "the", "a", "an", "from", "at", "with", "here",
    "just", "very", "so", "also", "ready", "happy", "curious", "wondering", "calling", "writing",
    "currently", "evaluating", "in", "on", "sure", "fine", "good", "ok", "okay",
}
_NOT_COMPANIES = {"I", "We", "The", "A", "An", "My", "Our", "Monday", "Tuesday", "Wednesday",
                  "Thursday", "Friday", "Saturday", "Sunday", "Hello", "Hi", "Thanks"}
DECISION_TITLES = re.compile(
    r"\b(ceo|cto|cfo|coo|cmo|cro|cio|founder|co-founder|owner|president|vp|vice president|head|director)\b",
    re.IGNORECASE,
)


def _words(*items: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(items) + r")\b", re.IGNORECASE)


# Each intent: its pattern and the confidence a match gives. First match in this order wins,
# so the more specific intents come first.
INTENT_RULES: list[tuple[str, re.Pattern[str], float]] = [
    ("human_request", _words(
        r"(?:talk|speak|chat) (?:to|with) (?:a |an |some )?(?:human|person|someone|somebody|agent|rep|representative|sales ?(?:person|rep|team)?)",
        r"real (?:person|human)", r"human agent", r"live agent", r"customer service rep",
        r"mit einem menschen", r"parler à (?:un|une) (?:humain|personne|conseiller)",
        r"hablar con (?:una persona|un humano|un agente)"), 0.95),
    ("booking", re.compile(r"\bbook\b.*\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z", re.IGNORECASE), 0.97),
    ("demo_request", _words(r"demo", r"demonstration", r"walkthrough", r"walk-through", r"trial call",
                            r"book (?:a |an )?(?:call|meeting)", r"schedule (?:a |an )?(?:call|meeting|demo)",
                            r"set up (?:a |an )?(?:call|meeting)", r"discovery call", r"termin",
                            r"rendez-vous", r"reunión", r"meeting"), 0.9),
    ("purchase_intent", _words(r"buy", r"purchase", r"sign up", r"subscribe", r"ready to (?:start|go|move)",
                               r"get started", r"contract", r"procure", r"quote", r"onboard",
                               r"kaufen", r"acheter", r"comprar"), 0.88),
    ("pricing", _words(r"price", r"prices", r"pricing", r"cost", r"costs", r"how much", r"plans?",
                       r"budget", r"discount", r"per seat", r"per user", r"preis", r"preise", r"kosten",
                       r"kostet", r"wie ?viel", r"prix", r"tarifs?", r"combien", r"coûte",
                       r"precio", r"precios", r"cu[aá]nto", r"cuesta"), 0.85),
    ("support", _words(r"bug", r"error", r"broken", r"not working", r"doesn't work", r"does not work",
                       r"can't log ?in", r"cannot log ?in", r"issue with my", r"problem with my",
                       r"refund", r"cancel my", r"support ticket", r"outage"), 0.85),
    ("objection", _words(r"too expensive", r"not interested", r"no budget", r"already (?:use|have)",
                         r"competitor", r"not sure (?:it|this)", r"not now", r"maybe later", r"too costly",
                         r"zu teuer", r"trop cher", r"muy caro"), 0.8),
    ("goodbye", _words(r"bye", r"goodbye", r"good bye", r"see you", r"that's all", r"that is all",
                       r"thanks,? that'?s it", r"have a (?:nice|good) day", r"tschüss", r"auf wiedersehen",
                       r"au revoir", r"adiós", r"adios"), 0.9),
    ("product_question", re.compile(
        r"\?|\b(?:how does|how do|what is|what are|does it|do you|can it|can you|is there|integrat\w*|"
        r"feature\w*|support for|works with|wie|was ist|comment|qu'est-ce|cómo|qué es)\b",
        re.IGNORECASE), 0.75),
    ("greeting", _words(r"hi", r"hello", r"hey", r"good (?:morning|afternoon|evening)", r"hallo",
                        r"guten tag", r"bonjour", r"salut", r"hola", r"buenos días"), 0.9),
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


def extract_contact(text: str) -> Contact:
    email = EMAIL.search(text)
    without_emails = EMAIL.sub(" ", text)  # "at jane@initech.com" names no company
    name = _name(without_emails)
    title = TITLE.search(text)
    return Contact(
        email=email.group(1).lower() if email else None,
        name=name,
        company=_company(without_emails, exclude=name),
        title=title.group(1) if title else None,
        phone=_phone(text),
    )


def _name(text: str) -> str | None:
    for match in NAME.finditer(text):
        words = match.group(1).split()
        kept: list[str] = []
        for word in words:
            if word.lower() in _NOT_NAMES or not word[0].isupper():
                break
            kept.append(word)
        if kept and kept[0].lower() not in _NOT_NAMES and not TITLE.fullmatch(kept[0]):
            return " ".join(kept)
    return None


def _company(text: str, *, exclude: str | None) -> str | None:
    for match in COMPANY.finditer(text):
        # A sentence ends the name: "at Initech. Email me" is Initech.
        company = re.split(r"[.,;:!?](?:\s|$)", match.group(1))[0].strip(" .,")
        if company in _NOT_COMPANIES or (exclude and company in exclude) or EMAIL.search(company):
            continue
        if TITLE.fullmatch(company):
            continue
        return company[:200]
    return None


def _phone(text: str) -> str | None:
    for match in PHONE.finditer(EMAIL.sub(" ", text)):
        digits = re.sub(r"\D", "", match.group(2))
        if not 7 <= len(digits) <= 15:
            continue
        if re.fullmatch(r"(19|20)\d{2}", digits[:4]) and len(digits) == 8:
            continue  # a date such as 20261124
        if match.group(1) in ("+", "00"):
            return "+" + digits
        if len(digits) >= 10:
            return "+" + digits if len(digits) > 10 else "+1" + digits  # North American default
    return None


def classify(text: str) -> tuple[str, float]:
    contact = extract_contact(text)
    for intent, pattern, confidence in INTENT_RULES:
        if pattern.search(text):
            return intent, confidence
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
    intent, confidence = classify(text)
    contact = extract_contact(text)
    slot = SLOT_TOKEN.search(text)
    return Reading(intent=intent, confidence=confidence, contact=contact,
                   signals=detect_signals(text, intent, contact),
                   slot_token=slot.group(1) if slot else None)
