"""``GET /widget.js``: the embeddable chat widget, one plain JavaScript file (docs/widget.md)."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.views.decorators.http import require_GET

WIDGET_SOURCE = settings.BASE_DIR / "static" / "widget" / "widget.js"
# Browsers re-check after five minutes (a cheap 304 thanks to the ETag), so a new release
# reaches every site quickly without a versioned URL in the customers' script tags.
CACHE_CONTROL = "public, max-age=300, stale-while-revalidate=86400"


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    etag: str


@lru_cache(maxsize=1)
def _load(mtime_ns: int) -> Asset:
    body = WIDGET_SOURCE.read_bytes()
    return Asset(body=body, gzipped=gzip.compress(body, compresslevel=9, mtime=0),
                 etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"')


def widget_asset() -> Asset:
    # Keyed by the file's mtime: an edited file is served at once in development.
    return _load(WIDGET_SOURCE.stat().st_mtime_ns)


@require_GET
def widget_js(request: HttpRequest) -> HttpResponse:
    asset = widget_asset()
    if asset.etag in request.headers.get("If-None-Match", ""):
        response: HttpResponse = HttpResponseNotModified()
    elif "gzip" in request.headers.get("Accept-Encoding", ""):
        response = HttpResponse(asset.gzipped, content_type="text/javascript; charset=utf-8")
        response["Content-Encoding"] = "gzip"
    else:
        response = HttpResponse(asset.body, content_type="text/javascript; charset=utf-8")
    response["ETag"] = asset.etag
    response["Cache-Control"] = CACHE_CONTROL
    response["Vary"] = "Accept-Encoding"
    # Sites that isolate themselves (Cross-Origin-Embedder-Policy) may still load the script.
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    return response
