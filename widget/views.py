"""``GET /widget.js``: the embeddable chat widget, one plain JavaScript file (docs/widget.md)."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from functools import lru_cache

import brotli
import rjsmin
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_GET

WIDGET_SOURCE = settings.BASE_DIR / "static" / "widget" / "widget.js"
# Browsers re-check after five minutes (a cheap 304 thanks to the ETag), so a new release
# reaches every site quickly without a versioned URL in the customers' script tags.
CACHE_CONTROL = "public, max-age=300, stale-while-revalidate=86400"
# The codings the widget is kept in, best first: brotli is about an eighth smaller than gzip.
CODINGS = ("br", "gzip")
# The source explains itself at length (comments, whitespace); visitors need none of it, and
# what it weighs counts against the size budget (docs/widget.md). rjsmin (the minifier
# django-compressor uses) takes out comments and the whitespace no statement needs, reading
# strings and regular expressions as JavaScript does; names are kept, so a stack trace from a
# customer's page still names the widget's functions.
@dataclass(frozen=True)
class Asset:
    body: bytes
    encoded: dict[str, bytes]  # content coding -> the body in it
    etag: str  # strong, of the file itself; a coded body carries it weak (docs/decisions.md)


@lru_cache(maxsize=1)
def _load(mtime_ns: int) -> Asset:
    body = rjsmin.jsmin(WIDGET_SOURCE.read_bytes())
    return Asset(body=body,
                 encoded={"br": brotli.compress(body, mode=brotli.MODE_TEXT, quality=11),
                          "gzip": gzip.compress(body, compresslevel=9, mtime=0)},
                 etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"')


def widget_asset() -> Asset:
    # Keyed by the file's mtime: an edited file is served at once in development, and each
    # coding is computed once per version of the file, never per request.
    return _load(WIDGET_SOURCE.stat().st_mtime_ns)


def accepted_codings(header: str) -> set[str]:
    """The content codings an ``Accept-Encoding`` header accepts (``q=0`` refuses one; ``*``
    accepts every coding not named)."""
    accepted: set[str] = set()
    refused: set[str] = set()
    for item in header.split(","):
        coding, _, params = item.strip().partition(";")
        coding = coding.strip().lower()
        (refused if _quality(params) == 0 else accepted).add(coding)
    if "*" in accepted:
        accepted |= set(CODINGS) - refused
    return accepted - refused


def _quality(params: str) -> float:
    name, _, value = params.strip().partition("=")
    if name.strip().lower() != "q":
        return 1.0
    try:
        return float(value)
    except ValueError:
        return 0.0  # a malformed weight accepts nothing rather than guess


def _not_modified(if_none_match: str, etag: str) -> bool:
    """If-None-Match's weak comparison: a weak or strong tag of the same file matches."""
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in tags or etag in tags


@require_GET
def widget_js(request: HttpRequest) -> HttpResponse:
    asset = widget_asset()
    accepted = accepted_codings(request.headers.get("Accept-Encoding", ""))
    coding = next((name for name in CODINGS if name in accepted), None)
    # A coded body is another representation of the same file: its tag is the file's, weak
    # (as Django's GZipMiddleware makes it), so a 304 answers a tag of any coding.
    etag = asset.etag if coding is None else f"W/{asset.etag}"
    if _not_modified(request.headers.get("If-None-Match", ""), asset.etag):
        response: HttpResponse = HttpResponseNotModified()
    elif coding is None:
        response = HttpResponse(asset.body, content_type="text/javascript; charset=utf-8")
    else:
        response = HttpResponse(asset.encoded[coding],
                                content_type="text/javascript; charset=utf-8")
        response["Content-Encoding"] = coding
    response["ETag"] = etag
    response["Cache-Control"] = CACHE_CONTROL
    response["Vary"] = "Accept-Encoding"
    # Sites that isolate themselves (Cross-Origin-Embedder-Policy) may still load the script.
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response
