"""Languages: the ISO 639-1 codes a request may name, and a small detector for the four
languages the built-in agent speaks (chat messages, knowledge-base documents)."""

from __future__ import annotations

import re

ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da
de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz
ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln
lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi
pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti
tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu
""".split())  # noqa: SIM905 - a table is easier to read than a list

_LANG_WORDS = {
    "de": {"ich", "und", "nicht", "wir", "sie", "ist", "das", "der", "die", "mit", "für", "hallo",
           "danke", "bitte", "preis", "wie", "haben", "möchte", "unsere", "kosten", "guten"},
    "fr": {"je", "et", "pas", "nous", "vous", "est", "le", "la", "les", "avec", "pour", "bonjour",
           "merci", "prix", "comment", "avons", "voudrais", "notre", "une", "des", "combien"},
    "es": {"yo", "y", "no", "nosotros", "usted", "es", "el", "la", "los", "con", "para", "hola",
           "gracias", "precio", "cómo", "tenemos", "quiero", "nuestra", "una", "cuánto", "qué"},
    "en": {"i", "and", "not", "we", "you", "is", "the", "with", "for", "hello", "hi", "thanks",
           "price", "how", "have", "would", "our", "a", "an", "what", "can", "do", "my"},
}


def detect_language(text: str) -> str | None:
    """ISO 639-1 of the text among en, de, fr, es; None when too little text to tell."""
    words = re.findall(r"[a-zà-ÿß]+", text.lower())
    if not words:
        return None
    scores = {lang: sum(w in vocab for w in words) for lang, vocab in _LANG_WORDS.items()}
    if re.search(r"[äöüß]", text.lower()):
        scores["de"] += 2
    if re.search(r"[ñ¿¡]", text.lower()):
        scores["es"] += 2
    if re.search(r"[çèêàù]", text.lower()):
        scores["fr"] += 1
    best = max(scores, key=lambda lang: (scores[lang], lang == "en"))
    return best if scores[best] > 0 else None
