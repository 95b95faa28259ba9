"""The widget's public endpoints: ``GET /widget.js``, ``GET /api/widget`` and the 404/400
answers of ``GET /api/chat/stream`` (its stream is tested live in test_widget_browser.py and
test_takeover_live.py)."""

from __future__ import annotations

from django.utils import timezone

from tests.chat_helpers import chat
from tests.dashboard.client import signed_in
from widget.strings import STRINGS


def test_widget_js_is_served_with_caching_headers(api):
    r = api.get("/widget.js", headers={"Accept-Encoding": "identity"})
    assert r.status_code == 200 and r.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "window.ServiceWidget" in r.text and "innerHTML" not in r.text
    assert r.headers["cache-control"].startswith("public, max-age=")
    assert r.headers["cross-origin-resource-policy"] == "cross-origin"
    assert api.get("/widget.js", headers={"If-None-Match": r.headers["etag"]}).status_code == 304
    gz = api.get("/widget.js", headers={"Accept-Encoding": "gzip"})
    assert gz.headers["content-encoding"] == "gzip" and gz.text == r.text


def test_widget_config_defaults_and_errors(api, kit):
    r = api.get(f"/api/widget?tenant={kit.tenant.public_id}")
    assert r.status_code == 200
    assert r.json() == {"tenant": kit.tenant.public_id, "name": "Acme Inc", "title": "Chat with us",
                        "greeting": "Hi! How can we help you today?", "position": "bottom-right",
                        "theme": {"primaryColor": "#2563eb", "textColor": "#ffffff"},
                        "consent": None, "honourDoNotTrack": False, "proactive": [],
                        "language": "en",
                        "strings": STRINGS["en"], "launcher": {"icon": "chat", "text": ""},
                        "rating": False}
    assert r.headers["cache-control"] == "public, max-age=60"
    assert api.get("/api/widget?tenant=tn_nope").json() == {"error": "Unknown tenant."}
    r = api.get("/api/widget")
    assert r.status_code == 400 and r.json()["error"].startswith("tenant")


def test_widget_config_cors_follows_the_allowed_origins(api, kit):
    kit.tenant.allowed_origins = ["https://shop.acme.com"]
    kit.tenant.save()
    url = f"/api/widget?tenant={kit.tenant.public_id}"
    r = api.get(url, headers={"Origin": "https://shop.acme.com"})
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == "https://shop.acme.com"
    assert "origin" in r.headers["vary"].lower()  # the answer differs by origin: caches keep both
    # Without an Origin (a server, curl) or from the service's own pages, the configuration.
    assert api.get(url).status_code == 200
    assert api.get(url, headers={"Origin": "https://testserver"}).status_code == 200


def test_an_origin_not_allowed_reads_why_and_chat_stays_refused(api, kit, manager):
    """A page on an origin the tenant did not allow can read the refusal (any origin may: it
    holds nothing of the tenant's), which names the origin and the dashboard field to add it
    to; its visit is not counted; the chat's preflight stays refused."""
    kit.tenant.allowed_origins = ["https://shop.acme.com"]
    kit.tenant.save()
    url = f"/api/widget?tenant={kit.tenant.public_id}&visitorId=v_evil"
    r = api.get(url, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    assert r.headers["access-control-allow-origin"] == "*"
    assert "origin" in r.headers["vary"].lower()
    assert r.json() == {"error": (
        f"Origin https://evil.example is not allowed to embed the widget of "
        f"{kit.tenant.public_id}: add it to \"Sites that may embed the widget\" "
        f"(dashboard, Settings → Allowed origins).")}
    # The field is named as the Settings page names it.
    page = signed_in(manager).get("/dashboard/settings/").content.decode()
    assert "Allowed origins</h2>" in page and ">Sites that may embed the widget</label>" in page
    # A file (or a sandboxed frame) has no origin to allow: it says so.
    r = api.get(url, headers={"Origin": "null"})
    assert r.status_code == 403 and "serve the page over http(s)" in r.json()["error"]
    # Refused loads are no visits of the funnel; an allowed one is.
    assert _visitors(api, kit) == 0
    api.get(url, headers={"Origin": "https://shop.acme.com"})
    assert _visitors(api, kit) == 1
    # An unknown tenant's 404 is readable by any page too (ServiceWidget.setTenant says so).
    r = api.get("/api/widget?tenant=tn_nope", headers={"Origin": "https://evil.example"})
    assert r.status_code == 404 and r.headers["access-control-allow-origin"] == "*"
    # The chat stays refused: its preflight from that origin is not allowed.
    chat_url = f"/api/chat?tenant={kit.tenant.public_id}"
    preflight = {"Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type"}
    r = api.request("OPTIONS", chat_url, headers={"Origin": "https://evil.example", **preflight})
    assert "access-control-allow-origin" not in r.headers
    r = api.request("OPTIONS", chat_url, headers={"Origin": "https://shop.acme.com", **preflight})
    assert r.headers["access-control-allow-origin"] == "https://shop.acme.com"


def _visitors(api, kit) -> int:
    today = timezone.now().date().isoformat()
    r = api.get(f"/api/v1/analytics/funnel?startDate={today}&endDate={today}",
                headers=kit.auth("read"))
    return next(s["count"] for s in r.json()["stages"] if s["name"] == "Visitors")


def test_chat_stream_refuses_unknown_or_foreign_sessions(api, kit, stranger):
    public = {"message": "Hi", "visitorId": "w1"}
    sid = api.post(f"/api/chat?tenant={kit.tenant.public_id}", json=public).json()["sessionId"]
    base = "/api/chat/stream"
    r = api.get(f"{base}?tenant={stranger.tenant.public_id}&sessionId={sid}&visitorId=w1")
    assert r.status_code == 404 and r.json() == {"error": "No such chat session for this visitor."}
    r = api.get(f"{base}?tenant={kit.tenant.public_id}&sessionId={sid}&visitorId=someone-else")
    assert r.status_code == 404
    r = api.get(f"{base}?tenant={kit.tenant.public_id}&visitorId=w1")
    assert r.status_code == 400 and r.json()["error"].startswith("sessionId")
    # A session of the test mode is not the widget's (the widget acts on live data).
    test_sid = chat(api, kit, "Hi", mode="test", visitor="w1").json()["sessionId"]
    r = api.get(f"{base}?tenant={kit.tenant.public_id}&sessionId={test_sid[5:]}&visitorId=w1")
    assert r.status_code == 404
