"""The visitor's own contact details in a message: email, name, company, job title and phone,
in English, German, French, Spanish, Italian, Portuguese and Dutch (docs/agent.md, "Contact
details").

What it reads:

- introductions ("my name is", "ich heiße", "je m'appelle", "me llamo", "mi chiamo",
  "chamo-me", "ik heet" take any name; "I'm", "ich bin", "je suis", "soy", "sono", "sou",
  "ik ben" take only a capitalised word that is no common word, title or nationality, so that
  "I'm interested" or "sono curioso" name nobody), with the employer after the name ("from",
  "von", "chez", "de", "di", "da", "van", ...) and a job title ("Head of Sales at Acme",
  "Leiter Marketing bei der Acme AG", "diretora de marketing da Acme");
- a signature: the lines after a sign-off ("Best,", "Mit freundlichen Grüßen", "Cordialement")
  or the last block of a message when it holds an address or a number: name, title, company;
- a name written right beside the address ("Ana Ruiz, ana@acme.es");
- which addresses are the visitor's: not one the message gives as someone else's ("my
  colleague's email is ...", "cc my boss at ...") or as the wrong one ("not x@y, it's z@y").

Everything here is deterministic, offline and cheap; words live in ``agent.contact_words``.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from core.languages import detect_language

from . import contact_words as words
from .types import Contact

EMAIL = re.compile(
    r"(?<![\w.+-])([A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})\b")
PHONE = re.compile(r"(?<![\w+])(\+|00)?(\d[\d\s().-]{6,18}\d)(?!\w)")
_URL = re.compile(r"https?://\S+|www\.\S+")
# A word (letters, inner apostrophes, hyphens, dots and "&"; a final dot kept for "Inc."), or
# one sign.
_TOKEN = re.compile(r"[^\W_](?:[\w'’\-.&]*[^\W_])?\.?|[^\w\s]")
_ELIDED = re.compile(r"^([dlDL]['’])(\w.*)$")  # "d'Armor", "l'azienda"


# --- tokens -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Tok:
    text: str  # the word without a sentence's final dot ("Acme" of "Acme."), or the sign
    start: int
    end: int
    ends_sentence: bool = False

    @property
    def low(self) -> str:
        return self.text.casefold()

    @property
    def sign(self) -> bool:
        return not self.text[0].isalnum()

    @property
    def capitalised(self) -> bool:
        return self.text[0].isupper()


def _abbreviation(word: str) -> bool:
    """Whether a word's final dot is its own ("Inc.", "B.V.", "Dr."), not a sentence's end."""
    low = word.casefold()
    return (low in words.LEGAL_FORMS or low in words.ACADEMIC or low in words.COURTESY
            or bool(re.fullmatch(r"(?:\w\.){2,}", word)) or bool(re.fullmatch(r"[A-Z]\.", word)))


def _tokens(text: str) -> list[_Tok]:
    found: list[_Tok] = []
    for match in _TOKEN.finditer(text):
        word, start = match.group(), match.start()
        elided = _ELIDED.match(word)
        if elided:  # "d'Acme": the preposition, then the word
            found.append(_Tok(elided.group(1), start, start + 2))
            word, start = elided.group(2), start + 2
        if len(word) > 1 and word.endswith(".") and not _abbreviation(word):
            found.append(_Tok(word[:-1], start, start + len(word) - 1, ends_sentence=True))
        else:
            found.append(_Tok(word, start, start + len(word)))
    return found


class _Text:
    """A message (its addresses and links blanked) with its tokens."""

    def __init__(self, text: str):
        self.raw = text
        self.text = _URL.sub(lambda m: " " * len(m.group()),
                             EMAIL.sub(lambda m: "\x00" * len(m.group()), text))
        self.toks = _tokens(self.text.replace("\x00", " "))
        self.starts = [tok.start for tok in self.toks]

    def after(self, position: int) -> int:
        """The index of the first token at or after ``position``."""
        return bisect_left(self.starts, position)

    def tok(self, index: int) -> _Tok | None:
        return self.toks[index] if 0 <= index < len(self.toks) else None

    def span(self, first: int, last: int) -> str:
        return self.text[self.toks[first].start:self.toks[last].end]


def _longest_first(items) -> str:
    return "|".join(re.escape(item) for item in sorted(items, key=len, reverse=True))


def _phrases(items) -> re.Pattern[str]:
    ordered = sorted(items, key=len, reverse=True)
    return re.compile(r"(?<![\w'’])(?:" + "|".join(re.escape(item) for item in ordered)
                      + r")(?![\w'’])", re.IGNORECASE)


_NAME_IS = _phrases(words.NAME_IS)
_I_AM = _phrases(words.I_AM)
_I_AM_BARE = re.compile(r"(?:^|[.!?,;:]\s*|\n\s*)(" + "|".join(words.I_AM_BARE) + r")\s",
                        re.IGNORECASE)
_WORK_AT = _phrases(words.WORK_AT)
_WORK_AS = _phrases(words.WORK_AS)
_CALLED = _phrases(words.CALLED)
_COMPANY_IS = re.compile(
    r"(?<!\w)(?:" + "|".join(sorted(words.COMPANY_NOUNS, key=len, reverse=True)) + r")\s+(?:"
    + "|".join(re.escape(v) for v in sorted(words.COMPANY_IS, key=len, reverse=True))
    + r")(?!\w)", re.IGNORECASE)
_WE_ARE = _phrases(words.WE_ARE)


# --- word kinds -----------------------------------------------------------------------------------

def _is_role(low: str) -> bool:
    if low in words.ROLES or low in words.ROLES_NEEDING_A_FIELD:
        return True
    return low not in words.NOT_ROLES and any(
        low.endswith(ending) and len(low) > len(ending) + 2 for ending in words.ROLE_ENDINGS)


def _name_word(tok: _Tok, *, lower_ok: bool = False) -> bool:
    """A word that may be part of a person's name."""
    text, low = tok.text, tok.low
    if tok.sign or not re.fullmatch(r"[^\W\d_](?:[^\W\d_]|['’\-](?=[^\W\d_]))*", text):
        return False
    if not (tok.capitalised or lower_ok):
        return False
    if (low in words.NOT_NAMES or low in words.STOP_WORDS or low in words.NOT_COMPANIES
            or low in words.ARTICLES or _is_role(low) or low in words.LEGAL_FORMS
            or low in words.TITLE_FIELDS or low in words.TITLE_QUALIFIERS):
        return False
    if re.search(r"['’](?:m|s|re|ve|ll|d)$", low):  # "I'm", "name's"
        return False
    return not (len(low) > 5 and low.endswith(words.NOT_NAME_ENDINGS))


def _company_word(tok: _Tok, *, lower_ok: bool = False) -> bool:
    if tok.sign:
        return tok.text == "&"
    first = tok.text[0]
    if not (first.isupper() or (first.isdigit() and any(c.isupper() for c in tok.text))
            or (lower_ok and first.isalpha() and tok.low not in words.STOP_WORDS)):
        return False
    return tok.low not in words.ROLES


# --- names ------------------------------------------------------------------------------------------

def _name_at(text: _Text, index: int, *, strict: bool) -> tuple[str | None, int]:
    """The name that starts at token ``index`` and the index after it. ``strict``: after an
    introduction that could also open anything else ("I'm", "sono"): capitalised words only."""
    tok, before = text.tok(index), text.tok(index - 1)
    # "sou o Pedro", "sou a Ana": Portuguese names a person with an article.
    if tok is not None and tok.low in ("o", "a") and before is not None and before.low == "sou" \
            and (nxt := text.tok(index + 1)) is not None and nxt.capitalised:
        index += 1
    while (tok := text.tok(index)) is not None and tok.low in words.COURTESY:
        index += 1
    kept: list[_Tok] = []
    while (tok := text.tok(index)) is not None and tok.low in words.ACADEMIC:
        kept.append(tok)
        index += 1
    names: list[_Tok] = []
    lower = False
    while (tok := text.tok(index)) is not None and len(names) < 4:
        if names and tok.low in words.NAME_PARTICLES:
            taken = _particle_surname(text, index, given=len(names))
            if taken is None:
                break
            names.extend(text.toks[index:taken])
            index = taken
            break
        if not _name_word(tok, lower_ok=not strict):
            break
        if names and tok.capitalised != names[0].capitalised:
            break  # "Anna from" / "anna Smith": one way of writing per name
        lower = not tok.capitalised
        names.append(tok)
        index += 1
        if tok.ends_sentence or (lower and len(names) == 2):
            break
    if not names:
        return None, index
    first = (kept or names)[0]
    last = names[-1]
    return text.text[first.start:last.end], index


def _particle_surname(text: _Text, index: int, *, given: int) -> int | None:
    """Where "de Vries" of "Sanne de Vries" ends; None when the particle starts an employer
    ("Jan van Acme Logistics", "Gustavo Rocha da Rocha Móveis"): a particle follows a single
    given name and precedes a single capitalised word."""
    if given != 1:
        return None
    j = index
    while (tok := text.tok(j)) is not None and tok.low in words.NAME_PARTICLES and j - index < 2:
        j += 1
    surname = text.tok(j)
    if surname is None or not _name_word(surname):
        return None
    following = text.tok(j + 1)
    if following is not None and not following.sign and following.capitalised \
            and not surname.ends_sentence:
        return None  # two capitalised words after "van": a company's name
    return j + 1


def _after_introduction(text: _Text, index: int, lower: bool) -> tuple[str | None, str | None]:
    """The employer or title right after an introduced name: "from Acme", ", CTO at Acme"."""
    tok = text.tok(index)
    if tok is not None and tok.text in (",", "-", "–", "—"):
        index += 1
        tok = text.tok(index)
    if tok is None:
        return None, None
    if tok.low in words.NAME_COMPANY_PREPOSITIONS:
        return _company_at(text, index + 1, lower_ok=lower), None
    title, end = _title_at(text, index)
    if title:
        return _company_after_title(text, end), title
    return None, None


# --- companies --------------------------------------------------------------------------------------

def _company_at(text: _Text, index: int, *, lower_ok: bool = False) -> str | None:
    """The company whose name starts at token ``index`` (after an article or "the company")."""
    tok = text.tok(index)
    while tok is not None and (tok.low in words.DEFINITE_ARTICLES or tok.low in words.COMPANY_NOUNS) \
            and (nxt := text.tok(index + 1)) is not None and not nxt.sign:
        index += 1
        tok = nxt
    if tok is None or not _company_word(tok, lower_ok=lower_ok) or tok.sign:
        return None
    if tok.low in words.NOT_COMPANIES or tok.low in words.NOT_NAMES and not tok.capitalised:
        return None
    first = last = index
    index += 1
    count = 1
    while (tok := text.tok(last)) is not None and not tok.ends_sentence and count < 6:
        nxt = text.tok(index)
        if nxt is None:
            break
        if nxt.text == "," and (legal := text.tok(index + 1)) is not None \
                and legal.low in words.LEGAL_FORMS and legal.capitalised:
            last = index + 1  # "Silva & Filhos, Lda."
            break
        if nxt.low in words.LEGAL_FORMS and (nxt.capitalised or nxt.text.isupper()):
            last = index
            break
        if nxt.low in words.COMPANY_JOINERS or nxt.text == "&":
            after = text.tok(index + 1)
            if after is not None and _company_word(after, lower_ok=lower_ok) and not after.sign:
                last = index + 1
                index += 2
                count += 1
                continue
            break
        if nxt.sign or not _company_word(nxt, lower_ok=lower_ok):
            break
        if lower_ok and not nxt.capitalised and nxt.low in words.STOP_WORDS:
            break
        last = index
        index += 1
        count += 1
    company = text.span(first, last).strip(" ,-")
    return company[:200] or None


def _company_after_title(text: _Text, index: int) -> str | None:
    tok = text.tok(index)
    if tok is not None and tok.text == ",":  # "CTO, Quantiva"
        company = _company_at(text, index + 1)
        if company:
            return company
    if tok is not None and tok.low in words.TITLE_COMPANY_PREPOSITIONS:
        return _company_at(text, index + 1)
    return None


# --- titles -----------------------------------------------------------------------------------------

def _title_at(text: _Text, index: int) -> tuple[str | None, int]:
    """The job title that starts at token ``index`` ("Head of Operations", "marketing
    director", "Leiter Marketing", "diretora de vendas"), after an article, and where it ends."""
    tok = text.tok(index)
    if tok is not None and tok.low in words.ARTICLES:
        index += 1
    first = index
    fields = 0
    while (tok := text.tok(index)) is not None and index - first < 3 and not _is_role(tok.low) \
            and (tok.low in words.TITLE_QUALIFIERS or tok.low in words.TITLE_FIELDS):
        fields += tok.low in words.TITLE_FIELDS
        index += 1
    tok = text.tok(index)
    if tok is None or tok.sign or not _is_role(tok.low):
        return None, first
    role = tok
    index += 1
    if role.low == "vice" and (nxt := text.tok(index)) is not None and nxt.low == "president":
        index += 1
    if role.low in ("amministratore", "consejero", "consejera") \
            and (nxt := text.tok(index)) is not None and nxt.low.startswith("delegat"):
        index += 1
    last = index - 1
    while not text.toks[last].ends_sentence and (tok := text.tok(index)) is not None:
        if tok.low in words.TITLE_FIELDS:
            fields += 1
            last = index
            index += 1
            continue
        joined = index
        while (joiner := text.tok(joined)) is not None and joiner.low in words.TITLE_JOINERS \
                and joined - index < 2:
            joined += 1
        field = text.tok(joined)
        if joined > index and field is not None and field.low in words.TITLE_FIELDS:
            fields += 1
            last = joined
            index = joined + 1
            continue
        break
    if role.low in words.ROLES_NEEDING_A_FIELD and not fields:
        return None, first
    return text.span(first, last), last + 1


_POSSESSIVE_BEFORE = re.compile(r"(?:^|\s)(?:" + _longest_first(words.MY | words.THEIR)
                                + r")\s+(?:\w+\s+)?$")


def _someone_elses_title(text: _Text, index: int) -> bool:
    """"my manager", "unser Geschäftsführer": a title of another person."""
    before = text.text[max(0, text.toks[index].start - 25):text.toks[index].start].casefold()
    return bool(_POSSESSIVE_BEFORE.search(before))


# --- introductions ---------------------------------------------------------------------------------

@dataclass
class _Found:
    name: str | None = None
    company: str | None = None
    title: str | None = None

    def take(self, *, name: str | None = None, company: str | None = None,
             title: str | None = None) -> None:
        self.name = self.name or name
        self.company = self.company or company
        self.title = self.title or title


def _introductions(text: _Text) -> _Found:
    found = _Found()
    for match in _NAME_IS.finditer(text.text):
        index = text.after(match.end())
        name, end = _name_at(text, index, strict=False)
        if name:
            lower = not name[0].isupper()
            company, title = _after_introduction(text, end, lower)
            found.take(name=name, company=company, title=title)
    starts = [(m.end(), m.group().casefold() in words.WEAK_I_AM) for m in _I_AM.finditer(text.text)]
    starts += [(m.end(1), False) for m in _I_AM_BARE.finditer(text.text)]
    for start, weak in sorted(starts):
        index = text.after(start)
        name, end = _name_at(text, index, strict=True)
        if name and weak and not _closes_introduction(text, end):
            name = None
        if name is None:
            name, end = _lower_case_introduction(text, index)
        if name:
            company, title = _after_introduction(text, end, not name[0].isupper())
            found.take(name=name, company=company, title=title)
            continue
        title, end = _title_at(text, index)
        if title:
            found.take(title=title, company=_company_after_title(text, end))
            continue
        tok = text.tok(index)
        if tok is not None and tok.low in words.NAME_COMPANY_PREPOSITIONS - {"of", "de", "di",
                                                                              "da", "do", "en"}:
            found.take(company=_company_at(text, index + 1))  # "I'm at Acme", "ich bin bei Acme"
    for index, tok in enumerate(text.toks):
        if tok.low in words.HERE and not found.name:
            name, company = _name_here(text, index)
            found.take(name=name, company=company)
    for match in _WORK_AS.finditer(text.text):
        index = text.after(match.end())
        if index < len(text.toks) and _someone_elses_title(text, index):
            continue
        title, end = _title_at(text, index)
        if title and match.group().casefold() in ("as", "als", "como", "come") \
                and not _first_person_before(text, match.start()):
            continue
        if title:
            found.take(title=title, company=_company_after_title(text, end))
    return found


def _name_here(text: _Text, here: int) -> tuple[str | None, str | None]:
    """"Jordan here from Acme", "Moin, Jens Petersen hier von der Petersen Werft": a name that
    fills its clause (a greeting word aside) right before "here", and the employer after it."""
    start = here
    while start > 0 and here - start < 5:
        before = text.toks[start - 1]
        if before.sign or before.ends_sentence:
            break
        start -= 1
    else:
        if start > 0:
            return None, None  # a longer clause: "all of us here"
    for first in (start, start + 1):  # "Hi Jordan here": a greeting word first
        name, end = _name_at(text, first, strict=True)
        if name and end == here:
            following = here + 2 if (comma := text.tok(here + 1)) and comma.text == "," else here + 1
            after = text.tok(following)
            if after is not None and after.low in words.NAME_COMPANY_PREPOSITIONS:
                return name, _company_at(text, following + 1)
            after = text.tok(here + 1)
            if after is None or after.sign or text.toks[here].ends_sentence:
                return name, None  # "Jordan here." but not "Click here for the price"
    return None, None


def _closes_introduction(text: _Text, index: int) -> bool:
    """Whether a name ends its introduction here: "this is Ana from Acme", "this is Ana."."""
    last, tok = text.tok(index - 1), text.tok(index)
    return (tok is None or (last is not None and last.ends_sentence) or tok.text in (",", "-", "!")
            or tok.low in ("from", "at", "with", "of", "here", "speaking"))


_FIRST_PERSON = re.compile(r"(?<!\w)(?:i|i'm|ich|je|j'|yo|io|eu|ik|me|mi|sono|sou|soy|bin|ben)(?!\w)")


def _first_person_before(text: _Text, position: int) -> bool:
    """Whether the clause before ``position`` is the visitor's ("I work here as ...")."""
    before = text.text[max(0, position - 40):position].casefold()
    return bool(_FIRST_PERSON.search(re.split(r"[.!?;\n]", before)[-1]))


def _lower_case_introduction(text: _Text, index: int) -> tuple[str | None, int]:
    """"this is jake from acme": a name in lower case only when an employer follows."""
    tok, following = text.tok(index), text.tok(index + 1)
    if tok is None or following is None or not _name_word(tok, lower_ok=True):
        return None, index
    if following.low in ("from", "at", "with", "von", "bei", "chez", "van", "bij"):
        return tok.text, index + 1
    return None, index


def _employers(text: _Text) -> str | None:
    for pattern in (_WORK_AT, _CALLED, _COMPANY_IS):
        for match in pattern.finditer(text.text):
            company = _company_at(text, text.after(match.end()))
            if company:
                return company
    for match in _WE_ARE.finditer(text.text):
        tok = text.tok(text.after(match.end()))
        if tok is not None and tok.capitalised and tok.low not in words.NOT_NAMES:
            company = _company_at(text, text.after(match.end()))
            if company:
                return company
    return None


# --- signatures --------------------------------------------------------------------------------------

_SIGN_OFF = re.compile(r"^\W*(?:" + _longest_first(words.SIGN_OFFS) + r")\W*$", re.IGNORECASE)
_LABEL = re.compile(r"^(?:" + _longest_first(words.PHONE_LABELS) + r")\s*[:.]?\s*", re.IGNORECASE)


def _contact_line(line: str) -> bool:
    """A line that holds an address, a link or a number: a signature's last lines."""
    bare = _LABEL.sub("", line)
    return bool(EMAIL.search(line) or _URL.search(line)
                or re.fullmatch(r"[+\d\s().\-/]{7,}", bare.strip()))


def _signature(message: str) -> _Found:
    """Name, title and company of the signature that ends ``message``, if it has one."""
    lines = [line.strip() for line in message.strip().splitlines()]
    block = None
    for number, line in enumerate(lines):
        if _SIGN_OFF.match(line) and number + 1 < len(lines):
            block = [x for x in lines[number + 1:] if x]
    if block is None:
        # No sign-off: the last paragraph, when it is a name above contact lines.
        paragraphs = "\n".join(lines).split("\n\n")
        last = [x for x in paragraphs[-1].splitlines() if x.strip()]
        if len(paragraphs) < 2 or not 2 <= len(last) <= 7 or not any(map(_contact_line, last)):
            return _Found()
        block = last
    found = _Found()
    if not block or len(block) > 8:
        return found
    first, *rest = _SIGNATURE_PARTS.split(block[0])  # "Ana Ruiz | CTO | Acme"
    name = _name_line(first, sole=len(block) == 1)
    if name is None:
        return found
    found.name = name
    for part in rest:
        _signature_part(part.strip(), found)
    for line in block[1:]:
        if _contact_line(line):
            continue
        for part in _SIGNATURE_PARTS.split(line):
            _signature_part(part.strip(), found)
    return found


_SIGNATURE_PARTS = re.compile(
    r"\s+[|·•/–—-]\s+|\s*,\s+(?=[^\W\d_])(?!(?:" + "|".join(
        re.escape(form) for form in sorted(words.LEGAL_FORMS, key=len, reverse=True))
    + r")(?:\s|$))", re.IGNORECASE)


def _name_line(line: str, *, sole: bool) -> str | None:
    text = _Text(line)
    if not text.toks or len(text.toks) > 5:
        return None
    name, end = _name_at(text, 0, strict=True)
    if name is None or end != len(text.toks):
        return None
    return name


def _signature_part(part: str, found: _Found) -> None:
    if not part or len(part.split()) > 7 or EMAIL.search(part):
        return
    text = _Text(part)
    if not found.title:
        title, end = _title_at(text, 0)
        if title and (end == len(text.toks) or _any_role(text)):
            if end == len(text.toks):
                found.title = title
                return
            rest = _company_after_title(text, end)
            if rest:
                found.title, found.company = title, found.company or rest
                return
        if _any_role(text) and len(text.toks) <= 6:
            found.title = part
            return
    # Any other line that starts with a capital is the company's: its whole name, articles and
    # legal forms included ("De Graaf Bouw", "Acme GmbH & Co. KG").
    if not found.company and text.toks and text.toks[0].capitalised \
            and text.toks[0].low not in words.NOT_COMPANIES and not _any_role(text) \
            and sum(c.isdigit() for c in part) < 3:
        found.company = part.strip()[:200]


def _any_role(text: _Text) -> bool:
    return any(not tok.sign and _is_role(tok.low) for tok in text.toks)


# --- a name beside the address ----------------------------------------------------------------------

def _name_beside_email(message: str, email: str) -> str | None:
    """"Ana Ruiz, ana@acme.es": the words right before the address, when they are a name
    alone (two words or more, or one that the address itself contains)."""
    at = message.casefold().find(email)
    if at < 0:
        return None
    line_start = message.rfind("\n", 0, at) + 1
    before = message[line_start:at].rstrip(" ,;:-–—(<|")
    segment = re.split(r"[:;.!?]\s|[:;]|,\s*|\s[–—-]\s", before)[-1].strip()
    if not segment:
        return None
    text = _Text(segment)
    name, end = _name_at(text, 0, strict=True)
    if name is None or end != len(text.toks):
        return None
    local = re.sub(r"[^a-z]", "", _plain(email.split("@")[0]))
    if len(name.split()) >= 2 or (len(name) > 2 and _plain(name) in local):
        return name
    return None


# Capitalised words in a row (a name's candidates, in any language and script with case).
_CAPITALISED_RUN = re.compile(r"(?<![\w'’-])(?:[^\W\d_a-z][^\W\d_]*(?:['’-][^\W\d_]+)?"
                              r"(?:[ \t]+|(?![\w'’-])))+")


def _name_the_address_spells(message: str, email: str) -> str | None:
    """A name anywhere in the message that the visitor's own address spells, whatever the
    language around it ("Jestem Tomasz Wiśniewski, mój adres to tomasz.w@…"): two or three
    capitalised words in a row whose first and last are the address's ("tomasz.w", "elif.yilmaz",
    "tomaszwisniewski", "twisniewski"). The address corroborates the words, so no introduction
    is needed; a pair the address does not spell names nobody."""
    local = email.split("@")[0]
    parts = [p for p in re.split(r"[^a-z]+", _plain(local)) if p]
    letters = "".join(parts)
    if len(letters) < 3:
        return None
    for run in _CAPITALISED_RUN.finditer(message):
        names = run.group(0).split()
        for size in (3, 2):
            for i in range(len(names) - size + 1):
                window = names[i:i + size]
                if not all(_name_word(_Tok(word, 0, len(word))) for word in window):
                    continue  # "Sales Team" for sales.team@…: words no name is made of
                first, last = _plain(window[0]), _plain(window[-1])
                if len(first) >= 2 and len(last) >= 2 and _spells(parts, letters, first, last):
                    return " ".join(window)[:200]
    return None


def _spells(parts: list[str], letters: str, first: str, last: str) -> bool:
    first, last = re.sub(r"[^a-z]", "", first), re.sub(r"[^a-z]", "", last)
    if not first or not last:
        return False
    if letters in (first + last, last + first, first[0] + last, first + last[0]):
        return True
    # "tomasz.w", "elif.yilmaz", "yilmaz.elif": one part is the first name, another begins the
    # last (or the other way round).
    return len(parts) >= 2 and (
        (parts[0] == first and last.startswith(parts[1]))
        or (parts[0] == last and first.startswith(parts[1])))


# Letters NFKD does not take apart: the Turkish dotless i, the Polish l, the Nordic o, and more.
_FOLD = str.maketrans({"ı": "i", "ł": "l", "ø": "o", "đ": "d", "ħ": "h", "æ": "ae", "œ": "oe",
                       "þ": "th", "ð": "d"})


def _plain(value: str) -> str:
    import unicodedata

    return "".join(c for c in unicodedata.normalize("NFKD", value.casefold().translate(_FOLD))
                   if not unicodedata.combining(c))


# --- addresses --------------------------------------------------------------------------------------

_OTHER = re.compile(
    r"(?<!\w)(?i:(?:" + _longest_first(words.MY) + r")\s+(?:\w+\s+)?(?:"
    + _longest_first(words.OTHER_PEOPLE) + r")(?:['’]s)?|(?:" + _longest_first(words.THEIR)
    + r")\s+(?:e-?mail|mail|address|adresse|e-?mail-adresse|correo|dirección|indirizzo|"
      r"endereço|mailadres|adres)|" + _longest_first(words.COPY)
    + r")(?!\w)|[A-Z][^\W\d_]+['’]s\s+(?i:e-?mail|address|mail)(?!\w)")
_SELF = re.compile(
    r"(?<!\w)(?:me|my|mine|mich|mir|mein|meine|moi|mon|ma|m['’]|mi|mis|mío|la mia|il mio|"
    r"scrivimi|meu|minha|o meu|a minha|mij|mijn|i|ich|je|yo|io|eu|ik)(?!\w)", re.IGNORECASE)
_NOT_THIS = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words.NOT_THIS)
                       + r")\s+(?:\S+\s+)?$", re.IGNORECASE)
_WRONG_AFTER = re.compile(
    r"^\W{0,3}(?:\w+\s+)?(?:is|was|ist|war|est|était|es|era|è|era|é|era|is|was)\s+"
    r"(?:wrong|incorrect|falsch|faux|fausse|incorrecte|mal|incorrecto|sbagliata|sbagliato|"
    r"errado|errada|fout|verkeerd)", re.IGNORECASE)


def not_the_visitors(message: str) -> frozenset[str]:
    """The addresses (lower case) that ``message`` gives as someone else's or as wrong."""
    others = set()
    for match in EMAIL.finditer(message):
        start = match.start()
        before = message[max(0, start - 70):start]
        clause = re.split(r"[.!?;\n](?:\s|$)", before)[-1]
        after = message[match.end():match.end() + 40]
        if _NOT_THIS.search(before[-30:]) or _WRONG_AFTER.match(after):
            others.add(match.group(1).lower())
            continue
        other = list(_OTHER.finditer(clause))
        if not other:
            continue
        own = [m for m in _SELF.finditer(clause) if m.start() >= other[-1].end()]
        if not own:
            others.add(match.group(1).lower())
    return frozenset(others)


# --- the message's details -------------------------------------------------------------------------

def extract_contact(message: str, *, others: frozenset[str] | None = None) -> Contact:
    """The visitor's own contact details in ``message``; ``others``: its
    ``not_the_visitors``, when the caller has them."""
    others = not_the_visitors(message) if others is None else others
    emails = [m.group(1).lower() for m in EMAIL.finditer(message)]
    email = next((e for e in emails if e not in others), None)
    text = _Text(message)
    introduced = _introductions(text)
    signed = _signature(message)
    name = introduced.name
    if signed.name and (name is None or _plain(signed.name).startswith(_plain(name))):
        name = signed.name
    if name is None and email:
        name = _name_beside_email(message, email) or _name_the_address_spells(message, email)
    return Contact(
        email=email,
        name=name,
        company=signed.company or introduced.company or _employers(text),
        title=signed.title or introduced.title,
        phone=_phone(message),
    )


# --- phone numbers -------------------------------------------------------------------------------

# Countries of a national number written with its trunk prefix 0 ("030 1234567"), by the
# language of the message, and how many digits follow the 0 there (None: any).
_TRUNK = {"de": ("49", None), "fr": ("33", 9), "en": ("44", 10), "nl": ("31", 9)}


def _phone(text: str) -> str | None:
    cleaned = re.sub(r"(\+\d{1,3})\s*\(0\)\s*", r"\1 ", EMAIL.sub(" ", text))  # +44 (0)20 ...
    language = None
    for match in PHONE.finditer(cleaned):
        digits = re.sub(r"\D", "", match.group(2))
        if not 7 <= len(digits) <= 15:
            continue
        if re.fullmatch(r"(19|20)\d{2}", digits[:4]) and len(digits) == 8:
            continue  # a date such as 20261124
        if match.group(1) in ("+", "00"):
            return "+" + digits
        if cleaned[match.start() - 1:match.start()] == "(" \
                and re.fullmatch(r"\d{2}\)\s?9\d{4}[\s-]?\d{4}", match.group(2)):
            return "+55" + digits  # "(11) 91234-5678": a Brazilian mobile, whatever the language
        language = language or detect_language(text)
        national = _national(digits, language)
        if national:
            return national
    return None


def _national(digits: str, language: str | None) -> str | None:
    """A number written without its country code, in E.164 when the language makes the
    country clear (docs/agent.md, "Phone numbers")."""
    if language in _TRUNK and digits.startswith("0") and digits[1:2] != "0":
        code, length = _TRUNK[language]
        if (length is None and 6 <= len(digits) - 1 <= 13) or len(digits) - 1 == length:
            return "+" + code + digits[1:]
    if language == "es" and re.fullmatch(r"[6789]\d{8}", digits):
        return "+34" + digits
    if language == "it" and (re.fullmatch(r"3\d{8,9}", digits) or re.fullmatch(r"0\d{5,10}", digits)):
        return "+39" + digits  # Italian numbers keep their 0; mobiles start with 3
    if language == "pt":
        if re.fullmatch(r"[29]\d{8}", digits):
            return "+351" + digits  # Portugal: nine digits
        if re.fullmatch(r"0?[1-9][1-9]9\d{8}|0?[1-9][1-9][2-5]\d{7}", digits):
            return "+55" + digits.lstrip("0")  # Brazil: area code, then 8 or 9 digits
    if re.fullmatch(r"1?[2-9]\d{9}", digits):
        return "+1" + digits[-10:]  # North American: an area code never starts with 0 or 1
    if len(digits) > 10 and digits[0] != "0":
        return "+" + digits  # a country code without its "+"
    return None
