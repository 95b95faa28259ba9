"""What no endpoint accepts, whatever its fields: text that PostgreSQL cannot store or that is
not text at all (NUL, lone UTF-16 surrogates), text that displays in another order than it
reads (bidirectional overrides), and JSON nested deeper than any request needs.

String fields refuse NUL and surrogates through DRF's validators; object fields (``customFields``,
``metadata``) hold arbitrary JSON, which ``jsonb`` refuses when it contains NUL and which cannot
be encoded when it contains a surrogate. The JSON parser checks the whole document once, keys
included, and names the offending value by its path (``customFields.a``, ``tags[2]``), so that
each endpoint answers 400 with the field, as it does for a string field."""

from __future__ import annotations

import re
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.exceptions import SuspiciousOperation
from django.http import Http404
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

# Deeper than any request of the specification (customFields and metadata are the deepest
# objects a client sends), shallow enough that no code that walks a value can overflow.
MAX_DEPTH = 64
NUL_MESSAGE = "Null characters are not allowed."
# Unicode's bidirectional embeddings, overrides and isolates: invisible, they make text display
# in another order than it is stored ("invoice\u202efdp.exe" shows as "invoiceexe.pdf"), which
# spoofs names and links in the dashboard and in receivers' systems (Trojan Source, CVE-2021-42574).
# The marks a right-to-left language needs (U+200E, U+200F, U+061C) stay allowed.
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"
_UNFIT = re.compile(f"[\ud800-\udfff{BIDI_CONTROLS}]")  # one C-speed scan of non-ASCII text


def text_problem(value: str) -> str | None:
    """Why ``value`` is not storable text, or None."""
    if "\x00" in value:
        return NUL_MESSAGE
    if value.isascii() or (found := _UNFIT.search(value)) is None:
        return None
    char = found.group()
    if "\ud800" <= char <= "\udfff":
        return f"Surrogate characters are not allowed: U+{ord(char):X}."
    return f"Bidirectional control characters are not allowed: U+{ord(char):X}."


def shown(key: str) -> str:
    """A key as a field path may show it: NUL and surrogates escaped, so that the error that
    names them can be encoded."""
    if text_problem(key) is None:
        return key
    return "".join(f"\\u{ord(c):04x}" if c == "\x00" or _UNFIT.match(c) else c for c in key)


def check_document(data: Any) -> None:
    """Raises ParseError when ``data`` nests deeper than MAX_DEPTH, and ValidationError naming
    each string (value or key) that holds NUL or a surrogate. Iterative: depth costs no stack."""
    problems: dict[str, list[str]] = {}
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            if (problem := text_problem(value)) is not None:
                problems.setdefault(path or "body", []).append(problem)
        elif isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels.")
            stack.extend(_children(value, path, depth + 1, problems))
    if problems:
        raise ValidationError(dict(sorted(problems.items())))


def _children(value: dict | list, path: str, depth: int, problems: dict[str, list[str]]):
    """The items of an object or array with their paths; an object's bad keys go to
    ``problems``."""
    if isinstance(value, list):
        return [(item, f"{path}[{index}]", depth) for index, item in enumerate(value)]
    children = []
    for key, item in value.items():
        child = f"{path}.{shown(key)}" if path else shown(key)
        if (problem := text_problem(key)) is not None:
            problems.setdefault(child, []).append(f"Key: {problem}")
        children.append((item, child, depth))
    return children


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with the checks above. Python's decoder itself recurses once per
    level and stops with RecursionError near a thousand: that, too, is a 400."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels.") from None
        check_document(data)
        return data


def query_problems(params) -> dict[str, list[str]]:
    """Each query parameter (name or value) that holds NUL, by its name."""
    problems: dict[str, list[str]] = {}
    for name, values in params.lists():
        bad = [p for p in (text_problem(name), *map(text_problem, values)) if p is not None]
        if bad:
            problems[shown(name)] = bad[:1]
    return problems


class QueryTextMiddleware:
    """Answers 400 before any view runs when a query parameter holds NUL (``?tenant=%00``):
    PostgreSQL refuses such a string in a query, so every endpoint would otherwise have to
    check each parameter it reads. On the API the surface's envelope names the parameters; a
    page gets Django's 400 page. A NUL in the path is a path nobody routes: 404."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        return self._refusal(request) or self.get_response(request)

    async def __acall__(self, request):
        return self._refusal(request) or await self.get_response(request)

    @staticmethod
    def _refusal(request):
        if "%00" not in request.META.get("QUERY_STRING", "") and "\x00" not in request.path:
            return None
        from config import views
        from config.api.errors import json_error, surface_of

        if "\x00" in request.path:
            return views.page_not_found(request, Http404())
        problems = query_problems(request.GET)
        if not problems:
            return None
        if surface := surface_of(request.path):
            return json_error(request, ValidationError(problems), surface)
        return views.bad_request(request, SuspiciousOperation("NUL in the query string"))
