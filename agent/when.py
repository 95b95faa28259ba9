"""When the visitor would like to meet, as they say it (docs/agent.md, "When the visitor would
like to meet"): "next week", "tomorrow morning", "Friday afternoon", "am Wochenende", "mardi ou
jeudi", in the seven languages the agent speaks. ``read_wish`` turns a message into the days
and the parts of the day it names, relative to the visitor's today; the slots offered then
start with those (``conversations.scheduling.free_slots``).

A small parser of the expressions people use for this, one ordered list of rules per language,
not a general date parser: each rule's match is consumed, so that a longer expression ("day
after tomorrow", "pasado mañana", "guten Morgen") is read before the words inside it
("tomorrow", "mañana", "Morgen"). Tuned on the dev phrasings only
(``agent/eval/data/when/dev.yaml``); the test phrasings measure it (``tests/agent/test_when.py``).

A weekday is the next one after today ("Monday" said on a Monday is the Monday after); "next
Tuesday" is the same day ("next" before a weekday tells nothing more in most uses); with "next
week" it is that weekday of next week. "This week" is today to Sunday; "next week" Monday to
Sunday of the next. Dates, not times: an hour ("at 3pm") is not read.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta

# The hours of each part of the day, in the visitor's time zone: [start, end).
PARTS: dict[str, tuple[int, int]] = {
    "morning": (6, 12), "noon": (11, 14), "afternoon": (12, 18), "evening": (17, 22),
}


@dataclass(frozen=True)
class Wish:
    """The days (None: any) and the parts of the day (empty: any) a visitor asked for."""

    days: frozenset[date] | None = None
    parts: tuple[str, ...] = ()

    def fits(self, local_day: date, local_hour: int) -> bool:
        """Whether a slot starting at this local day and hour is one the visitor asked for."""
        if self.days is not None and local_day not in self.days:
            return False
        return not self.parts or any(PARTS[p][0] <= local_hour < PARTS[p][1] for p in self.parts)

    def describe(self) -> str:
        """For the turn's record: "2026-11-30..2026-12-06 morning"."""
        days = sorted(self.days or ())
        span = "" if not days else (days[0].isoformat() if len(days) == 1 else
                                    f"{days[0].isoformat()}..{days[-1].isoformat()}")
        return " ".join(part for part in (span, *self.parts) if part)


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern
    meanings: tuple[tuple[str, object], ...]  # ("day", 1), ("week", 1), ("weekday", 0), ...


def _rule(pattern: str, *meanings: tuple[str, object]) -> _Rule:
    return _Rule(re.compile(pattern), meanings)


SKIP: tuple[tuple[str, object], ...] = ()  # a greeting or "later": read, and it means no time


def _weekdays(names: Iterable[str], suffixes: dict[str, str] | None = None, *,
              plural: str = "s?", after: str = "", first: int = 0) -> list[_Rule]:
    """One rule per weekday, from ``first`` (Monday: 0): the name (alternatives separated by
    ``|``), with an optional compound suffix naming a part of the day ("Dienstagnachmittag",
    "vrijdagmiddag"), the longest suffix first."""
    rules = []
    ordered = sorted((suffixes or {}).items(), key=lambda item: -len(item[0]))
    for index, name in enumerate(names, start=first):
        for word, part in ordered:
            rules.append(_rule(rf"\b(?:{name}){word}{plural}\b",
                               ("weekday", index), ("part", part)))
        rules.append(_rule(rf"\b(?:{name}){plural}\b{after}", ("weekday", index)))
    return rules


def _day(offset: int, part: str | None = None) -> tuple[tuple[str, object], ...]:
    return (("day", offset),) + ((("part", part),) if part else ())


RULES: dict[str, list[_Rule]] = {
    "en": [
        _rule(r"\bgood (?:morning|afternoon|evening)\b", *SKIP),
        _rule(r"\bday after tomorrow\b", *_day(2)),
        _rule(r"\btomorrow\b|\btmrw\b", *_day(1)),
        _rule(r"\btonight\b", *_day(0, "evening")),
        _rule(r"\bthis morning\b", *_day(0, "morning")),
        _rule(r"\bthis afternoon\b", *_day(0, "afternoon")),
        _rule(r"\bthis evening\b", *_day(0, "evening")),
        _rule(r"\btoday\b", *_day(0)),
        _rule(r"\b(?:next|the following|the coming|coming) week\b", ("week", 1)),
        _rule(r"\b(?:this|current) week\b", ("week", 0)),
        _rule(r"\bweekends?\b", ("weekend", True)),
        *_weekdays(["monday", "tuesday|tues", "wednesday|weds", "thursday|thurs", "friday",
                    "saturday", "sunday"]),
        _rule(r"\bbefore (?:noon|lunch)\b|\bmornings?\b", ("part", "morning")),
        _rule(r"\bafter lunch\b|\bafternoons?\b", ("part", "afternoon")),
        _rule(r"\blunch ?time\b|\blunch\b|\bnoon\b|\bmidday\b", ("part", "noon")),
        _rule(r"\bevenings?\b", ("part", "evening")),
    ],
    "de": [
        _rule(r"\bguten (?:morgen|tag|abend)\b", *SKIP),
        _rule(r"\bubermorgen\b", *_day(2)),
        _rule(r"\bheute (?:morgen|fruh)\b", *_day(0, "morning")),
        _rule(r"\bmorgen fruh\b", *_day(1, "morning")),
        _rule(r"\b(?:am|jeden|vom) (?:fruhen )?morgen\b|\bmorgens\b", ("part", "morning")),
        _rule(r"\bmorgen\b", *_day(1)),
        _rule(r"\bheute\b", *_day(0)),
        _rule(r"\b(?:nachste|kommende|folgende)[nrs]? woche\b", ("week", 1)),
        _rule(r"\b(?:diese|laufende)[nrs]? woche\b", ("week", 0)),
        _rule(r"\bwochenendes?\b", ("weekend", True)),
        *_weekdays(["montag", "dienstag", "mittwoch", "donnerstag", "freitag",
                    "samstag|sonnabend", "sonntag"],
                   {"vormittag": "morning", "morgen": "morning", "fruh": "morning",
                    "mittag": "noon", "nachmittag": "afternoon", "abend": "evening"}),
        _rule(r"\bvormittags?\b", ("part", "morning")),
        _rule(r"\bnachmittags?\b", ("part", "afternoon")),
        _rule(r"\bmittags?\b|\bmittagszeit\b|\bmittagspause\b", ("part", "noon")),
        _rule(r"\babends?\b", ("part", "evening")),
    ],
    "fr": [
        _rule(r"\bbonne (?:soiree|journee|apres midi)\b", *SKIP),
        _rule(r"\bapres demain\b", *_day(2)),
        _rule(r"\bdemain\b", *_day(1)),
        _rule(r"\bce matin\b", *_day(0, "morning")),
        _rule(r"\bcet apres midi\b", *_day(0, "afternoon")),
        _rule(r"\bce soir\b", *_day(0, "evening")),
        _rule(r"\baujourd hui\b", *_day(0)),
        _rule(r"\bsemaine (?:prochaine|suivante|qui vient)\b|\bprochaine semaine\b",
              ("week", 1)),
        _rule(r"\bcette semaine\b", ("week", 0)),
        _rule(r"\bweek ?ends?\b|\bfin de semaine\b", ("weekend", True)),
        *_weekdays(["lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"]),
        _rule(r"\bapres midi\b|\baprem\b", ("part", "afternoon")),
        _rule(r"\bmidi\b|\bdejeuner\b", ("part", "noon")),
        _rule(r"\bmatin(?:ee)?s?\b", ("part", "morning")),
        _rule(r"\bsoir(?:ee)?s?\b", ("part", "evening")),
    ],
    "es": [
        _rule(r"\bbuen(?:os|as) (?:dias|tardes|noches)\b|\bmas tarde\b", *SKIP),
        _rule(r"\bpasado manana\b", *_day(2)),
        _rule(r"\besta manana\b", *_day(0, "morning")),
        _rule(r"\besta tarde\b", *_day(0, "afternoon")),
        _rule(r"\besta noche\b", *_day(0, "evening")),
        _rule(r"\b(?:por|de|en) la manana\b|\bpor las mananas\b", ("part", "morning")),
        _rule(r"\bmanana\b", *_day(1)),
        _rule(r"\bhoy\b", *_day(0)),
        _rule(r"\b(?:la )?(?:proxima|siguiente) semana\b|\bsemana (?:que viene|proxima|siguiente)\b",
              ("week", 1)),
        _rule(r"\besta semana\b", ("week", 0)),
        _rule(r"\bfin(?:es)? de semana\b|\bfinde\b", ("weekend", True)),
        *_weekdays(["lunes", "martes", "miercoles", "jueves", "viernes", "sabado", "domingo"]),
        _rule(r"\bmediodia\b|\bhora de (?:comer|almorzar)\b", ("part", "noon")),
        _rule(r"\b(?:por|de|en) la tarde\b|\bpor las tardes\b|\btarde\b", ("part", "afternoon")),
        _rule(r"\b(?:por|de|en) la noche\b|\bnoche\b", ("part", "evening")),
    ],
    "it": [
        _rule(r"\bbuon(?:giorno|pomeriggio|asera|a sera|anotte)\b", *SKIP),
        _rule(r"\bstamattina\b|\bstamani\b", *_day(0, "morning")),
        _rule(r"\bstasera\b", *_day(0, "evening")),
        _rule(r"\bdomattina\b", *_day(1, "morning")),
        _rule(r"\bdopodomani\b", *_day(2)),
        _rule(r"\bdomani\b", *_day(1)),
        _rule(r"\boggi\b", *_day(0)),
        _rule(r"\b(?:la )?prossima settimana\b|\bsettimana (?:prossima|successiva|che viene|entrante)\b",
              ("week", 1)),
        _rule(r"\bquesta settimana\b", ("week", 0)),
        _rule(r"\bfine ?settimana\b|\bweek ?end\b", ("weekend", True)),
        *_weekdays(["lunedi", "martedi", "mercoledi", "giovedi", "venerdi", "sabato",
                    "domenica"], plural=""),
        _rule(r"\bmattin(?:a|ata|e)\b", ("part", "morning")),
        _rule(r"\bmezzogiorno\b|\b(?:ora di |pausa )?pranzo\b", ("part", "noon")),
        _rule(r"\bpomerigg(?:io|i)\b", ("part", "afternoon")),
        _rule(r"\bser(?:a|ata|e)\b", ("part", "evening")),
    ],
    "pt": [
        _rule(r"\bbo(?:m dia|a tarde|a noite)\b|\bmais tarde\b", *SKIP),
        _rule(r"\bdepois de amanha\b", *_day(2)),
        _rule(r"\bamanha\b", *_day(1)),
        _rule(r"\besta manha\b", *_day(0, "morning")),
        _rule(r"\besta tarde\b", *_day(0, "afternoon")),
        _rule(r"\besta noite\b", *_day(0, "evening")),
        _rule(r"\bhoje\b", *_day(0)),
        _rule(r"\b(?:a |na )?proxima semana\b|\bsemana (?:que vem|seguinte)\b", ("week", 1)),
        _rule(r"\b(?:esta|nesta|essa|nessa) semana\b", ("week", 0)),
        _rule(r"\bfins? de semana\b", ("weekend", True)),
        # The first five are also ordinals ("a segunda opção"): not before such a noun.
        *_weekdays(["segunda", "terca", "quarta", "quinta", "sexta"], plural="(?: feira)?",
                   after=r"(?! (?:opcao|opcoes|vez|parte|hipotese|versao|pergunta|questao|"
                         r"pessoa|fase|etapa|reuniao|chamada|proposta|alternativa)\b)"),
        *_weekdays(["sabado", "domingo"], first=5),
        _rule(r"\bmeio dia\b|\b(?:hora de |ao )?almoco\b", ("part", "noon")),
        _rule(r"\b(?:de|pela|na|a) manha\b|\bmanhas?\b", ("part", "morning")),
        _rule(r"\b(?:a|de|pela|na) tarde\b|\btardes?\b", ("part", "afternoon")),
        _rule(r"\b(?:a|de|pela|na) noite\b|\bnoites?\b", ("part", "evening")),
    ],
    "nl": [
        _rule(r"\bmorgen(?:ochtend|vroeg)\b", *_day(1, "morning")),
        _rule(r"\bmorgenmiddag\b", *_day(1, "afternoon")),
        _rule(r"\bmorgenavond\b", *_day(1, "evening")),
        _rule(r"\bvan(?:ochtend|morgen)\b", *_day(0, "morning")),
        _rule(r"\bvanmiddag\b", *_day(0, "afternoon")),
        _rule(r"\bvanavond\b", *_day(0, "evening")),
        _rule(r"\bovermorgen\b", *_day(2)),
        _rule(r"\bs morgens\b|\bs ochtends\b", ("part", "morning")),
        _rule(r"\bmorgen\b", *_day(1)),
        _rule(r"\bvandaag\b", *_day(0)),
        _rule(r"\b(?:volgende|komende) week\b|\bde week erna\b", ("week", 1)),
        _rule(r"\bdeze week\b", ("week", 0)),
        _rule(r"\bweekends?\b", ("weekend", True)),
        *_weekdays(["maandag", "dinsdag", "woensdag", "donderdag", "vrijdag", "zaterdag",
                    "zondag"],
                   {"ochtend": "morning", "morgen": "morning", "middag": "afternoon",
                    "avond": "evening"}),
        _rule(r"\brond de middag\b|\btussen de middag\b|\blunch(?:tijd)?\b", ("part", "noon")),
        _rule(r"\bochtends?\b|\bvoormiddag\b", ("part", "morning")),
        _rule(r"\bs middags\b|\bmiddag\b|\bnamiddag\b", ("part", "afternoon")),
        _rule(r"\bs avonds\b|\bavonds?\b", ("part", "evening")),
    ],
}


def normalise(text: str) -> str:
    """Casefolded, without accents, every run of other characters than letters and digits one
    space ("Après-midi" → "apres midi", "'s ochtends" → "s ochtends")."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " " + " ".join(re.sub(r"[\W_]+", " ", bare).split()) + " "


def read_wish(text: str, language: str, today: date) -> Wish | None:
    """The days and parts of the day ``text`` asks for, in ``language`` (English for a language
    the agent does not speak), relative to ``today`` (the visitor's date); None when it names
    none."""
    rest = normalise(text)
    found: list[tuple[str, object]] = []
    for rule in RULES.get(language, RULES["en"]):
        while (match := rule.pattern.search(rest)) is not None:
            found += rule.meanings
            rest = rest[:match.start()] + " | " + rest[match.end():]  # consumed
    if not found:
        return None
    parts = tuple(dict.fromkeys(str(value) for kind, value in found if kind == "part"))
    days = _days(found, today)
    if days is None and not parts:
        return None
    return Wish(days=days, parts=parts)


def _days(found: list[tuple[str, object]], today: date) -> frozenset[date] | None:
    offsets = {int(value) for kind, value in found if kind == "day"}  # type: ignore[call-overload]
    weeks = {int(value) for kind, value in found if kind == "week"}  # type: ignore[call-overload]
    weekdays = {int(value) for kind, value in found if kind == "weekday"}  # type: ignore[call-overload]
    if any(kind == "weekend" for kind, _ in found):
        weekdays |= {5, 6}
    days = {today + timedelta(days=offset) for offset in offsets}
    monday = today - timedelta(days=today.weekday())
    if weekdays and 1 in weeks:
        days |= {monday + timedelta(days=7 + weekday) for weekday in weekdays}
    elif weekdays:
        # The next such day after today.
        days |= {today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1)
                 for weekday in weekdays}
    elif 1 in weeks:
        days |= {monday + timedelta(days=7 + i) for i in range(7)}
    elif 0 in weeks:
        days |= {today + timedelta(days=i) for i in range(7 - today.weekday())}
    return frozenset(days) if days else None
