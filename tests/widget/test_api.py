"""The widget's public endpoints: ``GET /widget.js``, ``GET /api/widget`` and the 404/400
answers of ``GET /api/chat/stream`` (its stream is tested live in test_widget_browser.py and
test_takeover_live.py)."""

from __future__ import annotations

from tests.chat_helpers import chat


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
                        "theme": {"primaryColor": "#2563eb", "textColor": "#ffffff"}}
    assert r.headers["cache-control"] == "public, max-age=60"
    assert api.get("/api/widget?tenant=tn_nope").json() == {"error": "Unknown tenant."}
    r = api.get("/api/widget")
    assert r.status_code == 400 and r.json()["error"].startswith("tenant")


def test_widget_config_cors_follows_the_allowed_origins(api, kit):
    kit.tenant.allowed_origins = ["https://shop.acme.com"]
    kit.tenant.save()
    url = f"/api/widget?tenant={kit.tenant.public_id}"
    r = api.get(url, headers={"Origin": "https://shop.acme.com"})
    assert r.headers["access-control-allow-origin"] == "https://shop.acme.com"
    r = api.get(url, headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in r.headers


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
