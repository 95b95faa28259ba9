/*! Sales Agent chat widget. Plain JavaScript, no dependencies; see docs/widget.md.
 * <script src="{base_url}/widget.js" data-tenant="<public id>" async></script> */
(function () {
  "use strict";
  if (window.ServiceWidget) return;
  var script = document.currentScript;
  if (!script || !script.src) return;

  var BASE = script.src.replace(/\/widget\.js(?:[?#].*)?$/, "");
  var PREFIX = "service-widget:";
  var RELAYED = { "lead.qualified": 1, "meeting.booked": 1 };
  var memory = {};
  var listeners = [];
  var timers = [];
  var S = {
    tenant: script.getAttribute("data-tenant") || "",
    config: null, overrides: {}, isOpen: false, wantOpen: false, sending: false,
    visitorId: null, sessionId: null, status: null, controller: null, source: null,
    retries: 0, seen: {}, talked: false, unread: 0, destroyed: false, deferred: [], typed: 0
  };
  ["position", "greeting", "title"].forEach(function (k) {
    var v = script.getAttribute("data-" + k);
    if (v) S.overrides[k] = v;
  });
  if (script.getAttribute("data-primary-color")) S.overrides.primaryColor = script.getAttribute("data-primary-color");

  // --- small helpers ---------------------------------------------------------------------
  function on(target, type, fn, opts) {
    target.addEventListener(type, fn, opts);
    listeners.push([target, type, fn, opts]);
  }
  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    for (var k in attrs || {}) node.setAttribute(k, attrs[k]);
    if (text != null) node.textContent = text;
    return node;
  }
  function svg(path) {
    var ns = "http://www.w3.org/2000/svg";
    var s = document.createElementNS(ns, "svg");
    s.setAttribute("viewBox", "0 0 24 24");
    s.setAttribute("aria-hidden", "true");
    s.setAttribute("focusable", "false");
    var p = document.createElementNS(ns, "path");
    p.setAttribute("d", path);
    s.appendChild(p);
    return s;
  }
  function key(name, tenant) { return PREFIX + (tenant || S.tenant) + ":" + name; }
  function load(name) {
    try { return window.localStorage.getItem(key(name)); } catch (e) { return memory[key(name)] || null; }
  }
  function store(name, value) {
    var k = key(name);
    try {
      if (value == null) window.localStorage.removeItem(k); else window.localStorage.setItem(k, value);
    } catch (e) { if (value == null) delete memory[k]; else memory[k] = value; }
  }
  function randomId() {
    var a = new Uint8Array(12);
    (window.crypto || window.msCrypto).getRandomValues(a);
    return "v_" + Array.prototype.map.call(a, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
  }
  function q(params) {
    return Object.keys(params).map(function (k) {
      return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]);
    }).join("&");
  }
  function later(fn, ms) { var t = setTimeout(fn, ms); timers.push(t); return t; }

  // --- Markdown, rendered as DOM nodes: model and visitor text never becomes HTML ---------
  // Code, bold (may hold italics), [label](url) (the url may hold balanced parentheses), a bare
  // http(s) URL (without the punctuation that ends a sentence), italics (may hold bold). Each
  // part recurses only into shorter text; a link's label shows URLs as text (no link in a link).
  var INLINE = /(`[^`\n]+`)|(\*\*(?:[^*\n]|\*[^*\n]+\*)+\*\*)|\[([^\]\n]+)\]\(((?:[^()\s]|\([^()\s]*\))+)\)|(https?:\/\/(?:[^\s<>()]|\([^\s<>()]*\))*(?:[^\s<>().,;:!?'"]|\([^\s<>()]*\)))|(\*[^*\s](?:[^*\n]|\*\*[^*\n]+\*\*)*\*|\b_[^_\n]+_\b)/;
  function safeUrl(url) { return /^(https?:\/\/|mailto:)/i.test(url) ? url : null; }
  function anchor(href, text) { return el("a", { href: href, target: "_blank", rel: "noopener noreferrer nofollow" }, text); }
  function inline(text, parent, inLink) {
    var re = new RegExp(INLINE.source, "g"), last = 0, m, node;
    while ((m = re.exec(text))) {
      if (m[5] && inLink) continue;
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      last = re.lastIndex;
      if (m[1]) node = el("code", null, m[1].slice(1, -1));
      else if (m[2]) { node = el("strong"); inline(m[2].slice(2, -2), node, inLink); }
      else if (m[3]) {
        // Another scheme (javascript:, data:…) leaves the label as text.
        node = safeUrl(m[4]) ? anchor(m[4]) : document.createDocumentFragment();
        inline(m[3], node, true);
      } else if (m[5]) node = anchor(m[5], m[5]);
      else { node = el("em"); inline(m[6].slice(1, -1), node, inLink); }
      parent.appendChild(node);
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }
  function markdown(text, parent) {
    var block = null, m;
    String(text).split(/\r\n?|\n/).forEach(function (line) {
      if (!line.trim()) block = null;
      else if ((m = /^\s*#{1,6}\s+(.*)/.exec(line))) {
        block = null;
        inline(m[1], parent.appendChild(el("strong", { "class": "h" })));
      } else if ((m = /^\s*(?:[-*•]|(\d+)[.)])\s+(.*)/.exec(line))) {
        var tag = m[1] ? "ol" : "ul";
        if (!block || block.localName !== tag) block = parent.appendChild(el(tag, m[1] > 1 ? { start: m[1] } : null));
        inline(m[2], block.appendChild(el("li")));
      } else {
        if (block && block.localName === "p") block.appendChild(el("br"));
        else block = parent.appendChild(el("p"));
        inline(line, block);
      }
    });
  }
  // A message that cannot be rendered is still shown, as text, and the ones after it too.
  function render(text, parent) {
    try { markdown(text, parent); } catch (e) { parent.textContent = String(text); }
  }

  // --- the DOM, inside a shadow root ------------------------------------------------------
  var CSS = [
    ":host{all:initial}",
    "*{box-sizing:border-box}",
    ".w{--p:#2563eb;--t:#fff;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#111827}",
    ".launcher{position:fixed;bottom:20px;right:20px;width:58px;height:58px;border-radius:50%;border:0;background:var(--p);color:var(--t);cursor:pointer;box-shadow:0 6px 20px rgba(0,0,0,.22);display:flex;align-items:center;justify-content:center;z-index:2147483000}",
    ".left .launcher,.left .panel{right:auto;left:20px}",
    ".launcher svg{width:28px;height:28px;fill:currentColor}",
    ".badge{position:absolute;top:-2px;right:-2px;min-width:20px;height:20px;padding:0 5px;border-radius:10px;background:#dc2626;color:#fff;font-size:12px;line-height:20px;font-weight:600}",
    ".panel{position:fixed;bottom:90px;right:20px;width:370px;max-width:calc(100vw - 40px);height:560px;max-height:calc(100vh - 110px);background:#fff;border-radius:14px;box-shadow:0 12px 40px rgba(0,0,0,.25);display:flex;flex-direction:column;overflow:hidden;z-index:2147483000}",
    "[hidden]{display:none!important}",
    "header{background:var(--p);color:var(--t);padding:14px 16px;display:flex;align-items:center;gap:10px}",
    "h2{margin:0;font-size:16px;font-weight:600;flex:1}",
    ".close{background:transparent;border:0;color:inherit;cursor:pointer;width:32px;height:32px;border-radius:8px;display:flex;align-items:center;justify-content:center}",
    ".close svg{width:20px;height:20px;fill:currentColor}",
    ".log{flex:1;overflow-y:auto;padding:16px;display:flex;flex-direction:column;gap:10px;background:#f9fafb}",
    ".msg{max-width:85%;padding:9px 13px;border-radius:14px;word-wrap:break-word;overflow-wrap:anywhere}",
    ".msg p{margin:0 0 6px}.msg p:last-child{margin:0}.msg ul,.msg ol{margin:4px 0;padding-left:20px}",
    ".h{display:block}",
    ".msg code{background:rgba(0,0,0,.07);padding:0 4px;border-radius:4px;font-size:.92em}",
    ".msg a{color:inherit;text-decoration:underline}",
    ".user{align-self:flex-end;background:var(--p);color:var(--t);border-bottom-right-radius:4px;white-space:pre-wrap}",
    ".bot{align-self:flex-start;background:#fff;border:1px solid #e5e7eb;border-bottom-left-radius:4px}",
    ".human{border-color:var(--p)}",
    ".who{display:block;font-size:12px;font-weight:600;color:#4b5563;margin-bottom:2px}",
    ".err{background:#fef2f2;border-color:#fecaca;color:#991b1b}",
    ".failed{opacity:.7}.undelivered{align-self:flex-end;margin-top:-6px;font-size:12px;color:#b91c1c}",
    ".retry{font:inherit;font-weight:600;color:inherit;background:none;border:0;padding:0 2px;text-decoration:underline;cursor:pointer}.retry:disabled{text-decoration:none;cursor:default}",
    ".notice{align-self:center;text-align:center;font-size:13px;color:#4b5563;background:#eef2ff;border-radius:10px;padding:6px 12px;max-width:95%}",
    ".actions{display:flex;flex-wrap:wrap;gap:6px;align-self:flex-start;max-width:95%}",
    ".chip{font:inherit;font-size:13px;border:1px solid var(--p);color:var(--p);background:#fff;border-radius:16px;padding:5px 12px;cursor:pointer;text-decoration:none}",
    ".chip:hover{background:var(--p);color:var(--t)}",
    ".dots span{display:inline-block;width:7px;height:7px;margin:0 2px;border-radius:50%;background:#9ca3af;animation:b 1.2s infinite}",
    ".dots span:nth-child(2){animation-delay:.2s}.dots span:nth-child(3){animation-delay:.4s}",
    "@keyframes b{0%,80%,100%{opacity:.3}40%{opacity:1}}",
    "@media (prefers-reduced-motion:reduce){.dots span{animation:none}}",
    "form{display:flex;gap:8px;padding:10px;border-top:1px solid #e5e7eb;background:#fff}",
    ".consent{padding:14px 16px;border-top:1px solid #e5e7eb;background:#fff;font-size:14px;color:#374151}",
    ".consent p{margin:0 0 12px;white-space:pre-line}.consent div{display:flex;align-items:center;gap:12px}",
    ".consent a{color:inherit;font-weight:600;margin-right:auto}",
    ".accept{font:inherit;font-weight:600;border:0;border-radius:10px;background:var(--p);color:var(--t);padding:9px 20px;cursor:pointer}",
    "textarea{flex:1;resize:none;font:inherit;font-size:16px;border:1px solid #d1d5db;border-radius:10px;padding:8px 10px;max-height:120px;color:#111827;background:#fff}textarea:disabled{background:#f3f4f6}",
    ".send{border:0;border-radius:10px;background:var(--p);color:var(--t);width:44px;cursor:pointer;display:flex;align-items:center;justify-content:center}",
    ".send svg{width:20px;height:20px;fill:currentColor}.send:disabled{opacity:.5;cursor:default}",
    "button:focus-visible,a:focus-visible,textarea:focus-visible,.log:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}",
    ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}",
    "@media (max-width:480px){.panel{inset:0;width:100%;max-width:none;height:100%;max-height:none;border-radius:0}.open .launcher{display:none}}"
  ].join("");

  // A constructed style sheet where the browser has them: a page's Content-Security-Policy
  // governs <style> elements (style-src) but not these, so the widget keeps its look on a site
  // that allows no inline style (the service's own pages allow none). Older browsers get the
  // element, which such a site's policy blocks.
  function adoptStyles(shadow, css) {
    if ("adoptedStyleSheets" in shadow) {
      try {
        var sheet = new CSSStyleSheet();
        sheet.replaceSync(css);
        shadow.adoptedStyleSheets = [sheet];
        return;
      } catch (e) { /* a browser without the constructor: the element below */ }
    }
    shadow.appendChild(el("style", null, css));
  }

  var host = el("div", { "data-service-widget": "" });
  host.style.setProperty("display", "block", "important");
  var root = host.attachShadow({ mode: "open" });
  var wrap = el("div", { "class": "w" });
  var launcher = el("button", { "class": "launcher", type: "button", "aria-label": "Open chat",
    "aria-expanded": "false", "aria-controls": "sw-panel", "aria-haspopup": "dialog" });
  launcher.appendChild(svg("M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2zm3 6v2h2v-2H7zm4 0v2h2v-2h-2zm4 0v2h2v-2h-2z"));
  var badge = el("span", { "class": "badge", hidden: "" });
  launcher.appendChild(badge);
  var panel = el("div", { "class": "panel", id: "sw-panel", role: "dialog", "aria-modal": "false",
    "aria-labelledby": "sw-title", hidden: "" });
  var header = el("header");
  var title = el("h2", { id: "sw-title" });
  var closer = el("button", { "class": "close", type: "button", "aria-label": "Close chat" });
  closer.appendChild(svg("M18.3 5.7 12 12l6.3 6.3-1.4 1.4L10.6 13.4 4.3 19.7 2.9 18.3 9.2 12 2.9 5.7 4.3 4.3l6.3 6.3 6.3-6.3z"));
  header.appendChild(title);
  header.appendChild(closer);
  var log = el("div", { "class": "log", role: "log", "aria-live": "polite", "aria-label": "Conversation", tabindex: "0" });
  var form = el("form");
  var label = el("label", { "class": "sr", "for": "sw-input" }, "Your message");
  var input = el("textarea", { id: "sw-input", rows: "1", maxlength: "4000", placeholder: "Type your message…", autocomplete: "off" });
  var sendBtn = el("button", { "class": "send", type: "submit", "aria-label": "Send message" });
  sendBtn.appendChild(svg("M3.4 20.4 21 12 3.4 3.6 3.4 10l12.6 2-12.6 2z"));
  form.appendChild(label);
  form.appendChild(input);
  form.appendChild(sendBtn);
  // The tenant's notice, in place of the message box until the visitor accepts it.
  var consent = el("div", { "class": "consent", role: "region", "aria-label": "Before you chat", hidden: "" });
  var consentText = el("p");
  var consentRow = el("div");
  var consentLink = el("a", { target: "_blank", rel: "noopener noreferrer" }, "Privacy policy");
  var acceptBtn = el("button", { "class": "accept", type: "button" }, "Accept");
  consentRow.appendChild(consentLink);
  consentRow.appendChild(acceptBtn);
  consent.appendChild(consentText);
  consent.appendChild(consentRow);
  panel.appendChild(header);
  panel.appendChild(log);
  panel.appendChild(consent);
  panel.appendChild(form);
  wrap.appendChild(launcher);
  wrap.appendChild(panel);
  adoptStyles(root, CSS);
  root.appendChild(wrap);

  // --- look ---------------------------------------------------------------------------------
  function look() {
    var c = S.config || {}, o = S.overrides, theme = c.theme || {};
    var colour = /^#[0-9a-f]{3,8}$/i;
    var primary = o.primaryColor || theme.primaryColor, text = o.textColor || theme.textColor;
    if (primary && colour.test(primary)) wrap.style.setProperty("--p", primary);
    if (text && colour.test(text)) wrap.style.setProperty("--t", text);
    wrap.classList.toggle("left", (o.position || c.position) === "bottom-left");
    title.textContent = o.title || c.title || "Chat with us";
    panel.setAttribute("aria-label", title.textContent);
    var greeting = o.greeting != null ? o.greeting : c.greeting;
    var g = log.querySelector(".greeting");
    if (greeting) {
      if (!g) { g = el("div", { "class": "msg bot greeting" }); log.insertBefore(g, log.firstChild); }
      g.textContent = "";
      render(greeting, g);
    } else if (g) g.remove();
  }

  // --- messages -----------------------------------------------------------------------------
  function scroll() { log.scrollTop = log.scrollHeight; }
  function bubble(role, text, author) {
    var node = el("div", { "class": "msg " + (role === "user" ? "user" : "bot") + (author ? " human" : "") });
    node.appendChild(el("span", { "class": author ? "who" : "sr" },
      role === "user" ? "You: " : author ? author.name : "Assistant: "));
    var body = el("div");
    node.appendChild(body);
    if (role === "user") body.textContent = text; else render(text, body);
    node._body = body;
    log.appendChild(node);
    scroll();
    return node;
  }
  function notice(text) {
    var n = el("div", { "class": "notice", role: "status" }, text);
    log.appendChild(n);
    scroll();
  }
  function clearActions() {
    Array.prototype.forEach.call(log.querySelectorAll(".actions"), function (a) { a.remove(); });
  }
  function actions(list) {
    if (!list || !list.length) return;
    var row = el("div", { "class": "actions", role: "group", "aria-label": "Suggested replies" });
    list.forEach(function (a) {
      if (a.type === "reply" && a.message) {
        var b = el("button", { "class": "chip", type: "button" }, a.label);
        var m = a.metadata && typeof a.metadata === "object" && !Array.isArray(a.metadata) ? a.metadata : null;
        b.addEventListener("click", function () { send(a.message, m); });
        row.appendChild(b);
      } else if (a.type === "link" && safeUrl(a.url || "")) {
        row.appendChild(el("a", { "class": "chip", href: a.url, target: "_blank", rel: "noopener noreferrer nofollow" }, a.label));
      }
    });
    if (row.children.length) { log.appendChild(row); scroll(); }
  }
  // Consent (docs/widget.md): nothing is sent, not even a session's start, before the visitor
  // accepts the tenant's notice; the acceptance is kept per version and sent with each message.
  function accepted() {
    try { return JSON.parse(load("consent")); } catch (e) { return null; }
  }
  function pending() {
    var c = S.config && S.config.consent, a = accepted();
    return c && !(a && a.version === c.version) ? c : null;
  }
  // No configuration (loading, no such chat): nothing to type or send. A notice to accept
  // takes the message box's place.
  function setSending(v) {
    var c = pending(), link = c && safeUrl(c.link || "");
    S.sending = v;
    sendBtn.disabled = v || !S.config;
    input.disabled = !S.config;
    consent.hidden = !c;
    form.hidden = !!c;
    if (c) consentText.textContent = c.text;
    consentLink.hidden = !link;
    if (link) consentLink.href = link;
    log.setAttribute("aria-busy", v ? "true" : "false");
  }
  // A message that failed is marked, with a Retry (after a 429's Retry-After): never a new bubble.
  function undelivered(node, wait) {
    var row = el("div", { "class": "undelivered" }, "Not delivered · ");
    var retry = el("button", { "class": "retry", type: "button" });
    var until = Date.now() + wait * 1000;
    function tick() {
      var left = Math.ceil((until - Date.now()) / 1000);
      retry.disabled = left > 0;
      retry.textContent = left > 0 ? "Retry in " + left + " s" : "Retry";
      if (left > 0) later(tick, 1000);
    }
    retry.addEventListener("click", function () {
      if (S.sending) return;
      row.remove();
      node.classList.remove("failed");
      send(node._text, node._meta, node);
    });
    tick();
    row.appendChild(retry);
    node.classList.add("failed");
    log.insertBefore(row, node.nextSibling);
    scroll();
  }
  function zone() {
    try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { return ""; }
  }

  // --- Server-Sent Events over fetch (EventSource cannot POST) -------------------------------
  function readEvents(body, onEvent) {
    var reader = body.getReader(), decoder = new TextDecoder(), buf = "";
    function block(b) {
      var name = "message", data = [];
      b.split("\n").forEach(function (line) {
        if (!line || line.charAt(0) === ":") return;
        var c = line.indexOf(":"), f = c < 0 ? line : line.slice(0, c), v = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
        if (f === "event") name = v; else if (f === "data") data.push(v);
      });
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
    function pump() {
      return reader.read().then(function (r) {
        if (r.done) { if (buf.trim()) block(buf); return; }
        buf += decoder.decode(r.value, { stream: true }).replace(/\r\n?/g, "\n");
        var i;
        while ((i = buf.indexOf("\n\n")) >= 0) { block(buf.slice(0, i)); buf = buf.slice(i + 2); }
        return pump();
      });
    }
    return pump();
  }

  function setSession(id) {
    if (!id || id === S.sessionId) return;
    S.sessionId = id;
    S.status = "active";
    store("session", id);
    connectLive();
  }

  // extra: an action's metadata; node: the bubble of a message sent again (moved to the end).
  function send(text, extra, node) {
    text = String(text || "").trim();
    if (!text || S.sending || S.destroyed || !S.config || pending()) return;
    clearActions();
    if (node) log.appendChild(node);
    else { node = bubble("user", text); node._text = text; node._meta = extra; S.talked = true; }
    setSending(true);
    var reply = el("div", { "class": "msg bot" });
    reply.appendChild(el("span", { "class": "sr" }, "Assistant: "));
    var body = el("div", { "class": "dots", "aria-label": "The assistant is typing" });
    body.appendChild(el("span")); body.appendChild(el("span")); body.appendChild(el("span"));
    reply.appendChild(body);
    log.appendChild(reply);
    scroll();
    var content = "", frame = 0, tenant = S.tenant, started = false;
    function paint() {
      frame = 0;
      body.className = "";
      body.removeAttribute("aria-label");
      body.textContent = "";
      render(content, body);
      scroll();
    }
    var ctrl = window.AbortController ? new AbortController() : null;
    S.controller = ctrl;
    var nav = navigator, quiet = S.config.honourDoNotTrack && (nav.doNotTrack === "1" || nav.globalPrivacyControl === true);
    var metadata = quiet ? {} : { landingPage: location.href.slice(0, 500), referrer: (document.referrer || "").slice(0, 500) };
    for (var k in extra || {}) metadata[k] = extra[k];
    if (zone()) metadata.timezone = zone();
    var payload = { message: text, visitorId: S.visitorId, stream: true, metadata: metadata };
    if (S.sessionId) payload.sessionId = S.sessionId;
    if (S.config.consent) payload.consent = accepted();
    fetch(BASE + "/api/chat?" + q({ tenant: tenant }), {
      method: "POST", mode: "cors", credentials: "omit", signal: ctrl && ctrl.signal,
      headers: { "Content-Type": "application/json", "Accept": "text/event-stream" },
      body: JSON.stringify(payload)
    }).then(function (res) {
      if (res.status === 404 && S.sessionId) {
        // The stored session is unknown here (another database, another visitor): start anew.
        S.sessionId = null;
        store("session", null);
        reply.remove();
        setSending(false);
        send(text, extra, node);
        return "retried";
      }
      if (res.status === 403) { store("consent", null); start(false, true); }  // a newer notice
      if (!res.ok || !res.body) {
        var e = new Error("HTTP " + res.status);
        e.wait = res.status === 429 ? parseInt(res.headers.get("Retry-After"), 10) || 0 : 0;
        throw e;
      }
      return readEvents(res.body, function (name, data) {
        if (tenant !== S.tenant) return;
        if (name === "message_start") {
          started = true;
          S.seen[data.id] = 1;
          setSession(data.sessionId);
        } else if (name === "content_delta") {
          content += data.delta || "";
          if (!frame) frame = (window.requestAnimationFrame || setTimeout)(paint);
        } else if (name === "message_end") {
          if (content) paint(); else reply.remove();  // a person has the chat: nothing said
          actions(data.suggestedActions);
          (data.events || []).forEach(function (e) {
            if (!RELAYED[e.type]) return;
            var detail = { tenant: tenant, sessionId: S.sessionId, visitorId: S.visitorId, lead: e.lead };
            if (e.meeting) detail.meeting = e.meeting;
            window.dispatchEvent(new CustomEvent("service:" + e.type, { detail: detail }));
          });
        } else if (name === "error") {
          if (content) paint();
          reply.classList.add("err");
          body.className = "";
          body.textContent = (content ? content + "\n\n" : "") + "Sorry, the reply could not be completed. Please try again.";
        }
      });
    }).catch(function (err) {
      if (S.destroyed || (err && err.name === "AbortError")) return;
      if (!started) { reply.remove(); undelivered(node, err.wait || 0); return; }
      // Delivered, but the reply broke off: what came stays.
      reply.classList.add("err");
      body.className = "";
      body.textContent = (content ? content + "\n\n" : "") + "The reply was interrupted. Please try again.";
    }).then(function (outcome) {
      if (outcome === "retried" || S.destroyed) return;
      if (S.controller === ctrl) S.controller = null;
      setSending(false);
      S.deferred.splice(0).forEach(function (d) { onStatus(d, false); });
    });
  }

  // --- the live stream of the session: a person's replies, status changes -------------------
  function closeLive() {
    if (S.source) { S.source.close(); S.source = null; }
  }
  function onStatus(data, quiet) {
    if (S.sending && !quiet) { S.deferred.push(data); return; }  // after the reply in progress
    var before = S.status;
    S.status = data.status;
    if (data.status === "closed" || data.status === "expired") {
      closeLive();
      if (!quiet) notice("This conversation has ended. Send a message to start a new one.");
    } else if (data.notice) {
      // Who will reply, or who joined: stored state, so a reload (quiet) shows it again; once.
      var shown = log.querySelectorAll(".notice");
      if (!shown.length || shown[shown.length - 1].textContent !== data.notice) notice(data.notice);
    } else if (!quiet && data.status === "active" && before === "handed_off") {
      notice("You are chatting with our assistant again.");
    }
  }
  // A person typing: shown for 6 s, or until their message.
  function typing(name) {
    untype();
    log.appendChild(S.typing = el("div", { "class": "notice" }, name + " is typing…"));
    scroll();
    S.typingOff = later(untype, 6000);
  }
  function untype() { clearTimeout(S.typingOff); if (S.typing) S.typing.remove(); S.typing = null; }
  function onLiveMessage(m, replay) {
    if (S.seen[m.id]) return;
    if (m.author) untype();
    if (!replay && (m.role !== "assistant" || !m.author)) return;  // the page already shows these
    S.seen[m.id] = 1;
    bubble(m.role, m.content, m.author);
    if (!S.isOpen && m.author) {
      S.unread += 1;
      badge.textContent = String(S.unread);
      badge.hidden = false;
      launcher.setAttribute("aria-label", "Open chat (" + S.unread + " new)");
    }
  }
  function connectLive() {
    closeLive();
    if (!S.sessionId || !window.EventSource || S.destroyed) return;
    var src = new EventSource(BASE + "/api/chat/stream?" + q({ tenant: S.tenant, sessionId: S.sessionId, visitorId: S.visitorId }));
    S.source = src;
    src.addEventListener("session", function (e) {
      var s = JSON.parse(e.data);
      S.retries = 0;
      (s.messages || []).forEach(function (m) {
        if (!S.talked || (m.role === "assistant" && m.author)) onLiveMessage(m, true);
      });
      onStatus(s, true);
    });
    src.addEventListener("message", function (e) { onLiveMessage(JSON.parse(e.data), false); });
    src.addEventListener("status", function (e) { onStatus(JSON.parse(e.data), false); });
    src.addEventListener("typing", function (e) { var a = JSON.parse(e.data).author; if (a) typing(a.name); });
    src.addEventListener("reconnect", function (e) {  // the server is stopping: to another one
      if (S.source !== src) return;
      closeLive();
      later(function () { if (!S.source && !S.destroyed) connectLive(); }, JSON.parse(e.data).retryMs + Math.random() * 750);
    });
    src.onerror = function () {
      if (src.readyState !== 2 || S.source !== src) return;  // 2: closed for good; retry ourselves
      S.source = null;
      if (S.retries++ < 6 && S.status !== "closed" && S.status !== "expired") {
        later(function () { if (!S.source && !S.destroyed) connectLive(); }, Math.min(30000, 1000 * Math.pow(2, S.retries)));
      }
    };
  }

  // --- configuration, tenant, session -------------------------------------------------------
  // again: after an acceptance, or a refusal for want of one (the notice may be new).
  function start(fresh, again) {
    S.visitorId = load("visitor");
    if (!S.visitorId) { S.visitorId = randomId(); store("visitor", S.visitorId); }
    if (fresh) store("session", null);
    S.sessionId = load("session");
    var tenant = S.tenant, params = { tenant: tenant, visitorId: S.visitorId }, a = accepted();
    if (a) params.consent = a.version;
    // Its refusals are readable from any page: a 403 names the origin to allow (docs/widget.md).
    fetch(BASE + "/api/widget?" + q(params), { mode: "cors", credentials: "omit", cache: again ? "no-cache" : "default" })
      .then(function (r) {
        return r.json().then(function (body) {
          if (r.ok) return body;
          var e = new Error(body.error || "HTTP " + r.status);
          e.status = r.status;
          throw e;
        });
      })
      .then(function (config) {
        if (tenant !== S.tenant || S.destroyed) return;
        S.config = config;
        setSending(S.sending);
        look();
        if (!host.isConnected) document.body.appendChild(host);
        if (S.sessionId && !pending()) connectLive();
        if (S.wantOpen) api.open();
      })
      .catch(function (err) {
        if (tenant !== S.tenant || S.destroyed) return;
        if (window.console) console.warn("ServiceWidget: " + (err.status === 403 ? err.message : "no configuration for tenant " + tenant + " (" + err.message + ")"));
        if (host.isConnected) { S.failed = true; notice("This chat isn't available."); if (S.wantOpen) api.open(); }
      });
  }
  function reset() {
    if (S.controller) S.controller.abort();
    S.controller = null;
    closeLive();
    timers.forEach(clearTimeout);
    timers = [];
    setSending(false);
    S.failed = false; S.seen = {}; S.status = null; S.deferred = []; S.talked = false; S.unread = 0; S.retries = 0;
    badge.hidden = true;
    untype();
    log.textContent = "";
  }

  // --- interaction ----------------------------------------------------------------------------
  on(launcher, "click", function () { if (S.isOpen) api.close(); else api.open(); });
  // Escape closes the open widget from its launcher too, not only from inside the panel.
  on(launcher, "keydown", function (e) { if (e.key === "Escape" && S.isOpen) { e.stopPropagation(); api.close(); } });
  on(closer, "click", function () { api.close(); });
  on(form, "submit", function (e) {
    e.preventDefault();
    var text = input.value;
    if (!text.trim() || S.sending || !S.config) return;
    input.value = "";
    grow();
    send(text);
  });
  function grow() { input.style.height = "auto"; input.style.height = Math.min(input.scrollHeight, 120) + "px"; }
  // The person who has the conversation sees the visitor type.
  on(input, "input", function () {
    grow();
    if (S.status === "handed_off" && input.value.trim() && Date.now() - S.typed > 2500) {
      S.typed = Date.now();
      fetch(BASE + "/api/chat/typing?" + q({ tenant: S.tenant, sessionId: S.sessionId, visitorId: S.visitorId }), { method: "POST", credentials: "omit" }).catch(function () {});
    }
  });
  on(input, "keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      if (form.requestSubmit) form.requestSubmit(); else form.dispatchEvent(new Event("submit", { cancelable: true }));
    }
  });
  on(panel, "keydown", function (e) { if (e.key === "Escape") { e.stopPropagation(); api.close(); } });
  on(acceptBtn, "click", function () {
    var c = pending();
    if (!c) return;
    store("consent", JSON.stringify({ version: c.version, acceptedAt: new Date().toISOString() }));
    setSending(S.sending);
    input.focus();
    start(false, true);  // counts the visit, and shows a notice changed meanwhile
  });

  var api = {
    open: function () {
      if (S.destroyed) return;
      S.wantOpen = true;
      if (!S.config && !S.failed) return;
      S.isOpen = true;
      panel.hidden = false;
      wrap.classList.add("open");
      launcher.setAttribute("aria-expanded", "true");
      launcher.setAttribute("aria-label", "Close chat");
      S.unread = 0;
      badge.hidden = true;
      scroll();
      (pending() ? acceptBtn : input).focus();
    },
    close: function () {
      if (S.destroyed) return;
      S.wantOpen = false;
      var inside = root.activeElement != null;
      S.isOpen = false;
      panel.hidden = true;
      wrap.classList.remove("open");
      launcher.setAttribute("aria-expanded", "false");
      launcher.setAttribute("aria-label", "Open chat");
      if (inside) launcher.focus();
    },
    setTenant: function (id) {
      if (S.destroyed || !id) return;
      S.config = null;
      reset();
      S.tenant = String(id);
      start(true);
    },
    update: function (options) {
      if (S.destroyed || !options) return;
      ["position", "primaryColor", "textColor", "title", "greeting"].forEach(function (k) {
        if (k in options) S.overrides[k] = options[k];
      });
      look();
      if (options.open === true) api.open(); else if (options.open === false) api.close();
    },
    destroy: function () {
      if (S.destroyed) return;
      reset();
      S.destroyed = true;
      listeners.forEach(function (l) { l[0].removeEventListener(l[1], l[2], l[3]); });
      listeners = [];
      host.remove();
      delete window.ServiceWidget;
    }
  };
  // For tests (docs/widget.md): a message's Markdown as the widget renders it, in a detached div.
  api._render = function (text) { var d = el("div"); render(text, d); return d; };
  Object.defineProperty(api, "tenant", { get: function () { return S.tenant; } });
  Object.defineProperty(api, "sessionId", { get: function () { return S.sessionId; } });
  Object.defineProperty(api, "visitorId", { get: function () { return S.visitorId; } });
  window.ServiceWidget = api;

  if (S.tenant) start(false);
  else if (window.console) console.warn("ServiceWidget: the script tag has no data-tenant");
})();
