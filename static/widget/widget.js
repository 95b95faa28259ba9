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
  // data-primary-color -> primaryColor; a launcher's text may be set empty (no label).
  ["position", "greeting", "title", "primary-color", "language", "launcher-icon", "launcher-text"].forEach(function (k) {
    var v = script.getAttribute("data-" + k);
    if (v || (v === "" && k === "launcher-text")) S.overrides[k.replace(/-(.)/g, function (m, c) { return c.toUpperCase(); })] = v;
  });

  // --- the widget's own words (docs/widget.md, "Languages") ------------------------------------
  // English; the configuration brings the visitor's language (widget/strings.py, whose English
  // table is this one). t(key, n): the words, with {n} a number or a name.
  var L = {
    open: "Open chat", openN: "Open chat ({n} new)", close: "Close chat", log: "Conversation",
    msg: "Your message", ph: "Type your message…", send: "Send message", before: "Before you chat",
    policy: "Privacy policy", accept: "Accept", you: "You: ", bot: "Assistant: ",
    chips: "Suggested replies", lost: "Not delivered · ", retry: "Retry", retryIn: "Retry in {n} s",
    dots: "The assistant is typing",
    failed: "Sorry, the reply could not be completed. Please try again.",
    cut: "The reply was interrupted. Please try again.",
    ended: "This conversation has ended. Send a message to start a new one.",
    back: "You are chatting with our assistant again.", typing: "{n} is typing…",
    off: "This chat isn't available.", rate: "How was this conversation?", good: "Good", bad: "Bad",
    note: "Anything to add? (optional)", noteSend: "Send", thanks: "Thank you for your feedback!", dismiss: "Dismiss",
    attach: "Attach a file (image or PDF)", fileNo: "This file can't be sent: only PNG, JPEG, GIF, WebP or PDF files within the size limit."
  };
  var W = L;
  function t(k, n) { return (W[k] || L[k]).replace("{n}", n); }
  // A node whose text is the widget's: written again when the language changes.
  function tr(node, k, n, attr) {
    node._t = [k, n, attr];
    if (attr) node.setAttribute(attr, t(k, n)); else node.textContent = t(k, n);
    return node;
  }

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
  // Per browser tab (sessionStorage): the proactive messages shown, a close, returning or not.
  function sess(name, value) {
    var k = key(name);
    try { return value === undefined ? sessionStorage.getItem(k) : sessionStorage.setItem(k, value); } catch (e) { return value === undefined ? memory[k] : (memory[k] = value); }
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
    ".send svg,.att svg{width:20px;height:20px;fill:currentColor}.send:disabled{opacity:.5;cursor:default}",
    ".att{border:0;background:none;color:#4b5563;cursor:pointer;padding:0}.file{display:block;margin-top:6px;color:inherit}.file img{max-width:100%;max-height:160px;border-radius:8px}",
    "button:focus-visible,a:focus-visible,textarea:focus-visible,.log:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}",
    ".rate{align-self:stretch;text-align:center;background:#fff;border:1px solid #e5e7eb;border-radius:12px;padding:10px 12px;font-size:14px}",
    ".rate p{margin:0 0 8px}.rate div{display:flex;justify-content:center;gap:12px}",
    ".thumb{border:1px solid #d1d5db;border-radius:50%;width:44px;height:44px;background:#fff;color:#4b5563;cursor:pointer;display:flex;align-items:center;justify-content:center}",
    ".thumb svg{width:20px;height:20px;fill:currentColor}.bad svg{transform:rotate(180deg)}.thumb[aria-pressed=true]{background:var(--p);color:var(--t);border-color:var(--p)}",
    ".rate form{flex-direction:column;padding:8px 0 0;border:0}",
    ".launcher.pill{width:auto;border-radius:29px;padding:0 20px;gap:8px;font:600 15px system-ui,sans-serif}",
    ".sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}",
    ".pro .greeting{display:none}",
    ".tease{position:fixed;bottom:90px;right:20px;max-width:calc(100vw - 40px);width:290px;display:flex;align-items:flex-start;background:#fff;border-radius:14px;box-shadow:0 12px 40px rgba(0,0,0,.25);z-index:2147483000}",
    ".left .tease{right:auto;left:20px}",
    ".tease button{font:inherit;color:inherit;background:none;border:0;cursor:pointer;text-align:left;padding:12px;max-height:8em;overflow:hidden}.tease .tx{color:#4b5563}",
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
  var launcher = el("button", { "class": "launcher", type: "button",
    "aria-expanded": "false", "aria-controls": "sw-panel", "aria-haspopup": "dialog" });
  // The launcher's icons (docs/widget.md, "Launcher"): "none" shows its text alone.
  var ICONS = {
    chat: "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2zm3 6v2h2v-2H7zm4 0v2h2v-2h-2zm4 0v2h2v-2h-2z",
    question: "M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm1 17h-2v-2h2v2zm2.1-7.8-.9.9C13.5 12.9 13 13.5 13 15h-2v-.5c0-1.1.4-2.1 1.2-2.8l1.2-1.3A2 2 0 1 0 10 9H8a4 4 0 1 1 7.1 2.2z",
    headset: "M12 1a9 9 0 0 0-9 9v7a3 3 0 0 0 3 3h3v-8H5v-2a7 7 0 0 1 14 0v2h-4v8h4v1h-7v2h6a3 3 0 0 0 3-3V10a9 9 0 0 0-9-9z"
  };
  var icon = launcher.appendChild(svg(ICONS.chat));
  var ltext = launcher.appendChild(el("span", { "class": "lt" }));
  var badge = el("span", { "class": "badge", hidden: "" });
  launcher.appendChild(badge);
  var panel = el("div", { "class": "panel", id: "sw-panel", role: "dialog", "aria-modal": "false",
    "aria-labelledby": "sw-title", hidden: "" });
  var header = el("header");
  var title = el("h2", { id: "sw-title" });
  var closer = tr(el("button", { "class": "close", type: "button" }), "close", 0, "aria-label");
  closer.appendChild(svg("M18.3 5.7 12 12l6.3 6.3-1.4 1.4L10.6 13.4 4.3 19.7 2.9 18.3 9.2 12 2.9 5.7 4.3 4.3l6.3 6.3 6.3-6.3z"));
  header.appendChild(title);
  header.appendChild(closer);
  var log = tr(el("div", { "class": "log", role: "log", "aria-live": "polite", tabindex: "0" }), "log", 0, "aria-label");
  var form = el("form");
  var label = tr(el("label", { "class": "sr", "for": "sw-input" }), "msg");
  var input = tr(el("textarea", { id: "sw-input", rows: "1", maxlength: "4000", autocomplete: "off" }), "ph", 0, "placeholder");
  var sendBtn = tr(el("button", { "class": "send", type: "submit" }), "send", 0, "aria-label");
  sendBtn.appendChild(svg("M3.4 20.4 21 12 3.4 3.6 3.4 10l12.6 2-12.6 2z"));
  // A file (docs/widget.md, "Attachments"): chosen, it is sent at once, with any text typed.
  var attBtn = tr(el("button", { "class": "att", type: "button" }), "attach", 0, "aria-label");
  attBtn.appendChild(svg("M16.5 6v11.5a4 4 0 0 1-8 0V5a2.5 2.5 0 0 1 5 0v10.5a1 1 0 0 1-2 0V6H10v9.5a2.5 2.5 0 0 0 5 0V5a4 4 0 0 0-8 0v12.5a5.5 5.5 0 0 0 11 0V6z"));
  var picker = el("input", { type: "file", hidden: "", accept: "image/png,image/jpeg,image/gif,image/webp,application/pdf,.png,.jpg,.jpeg,.gif,.webp,.pdf" });
  form.appendChild(label);
  form.appendChild(input);
  form.appendChild(attBtn);
  form.appendChild(picker);
  form.appendChild(sendBtn);
  // The tenant's notice, in place of the message box until the visitor accepts it.
  var consent = tr(el("div", { "class": "consent", role: "region", hidden: "" }), "before", 0, "aria-label");
  var consentText = el("p");
  var consentRow = el("div");
  var consentLink = tr(el("a", { target: "_blank", rel: "noopener noreferrer" }), "policy");
  var acceptBtn = tr(el("button", { "class": "accept", type: "button" }), "accept");
  consentRow.appendChild(consentLink);
  consentRow.appendChild(acceptBtn);
  consent.appendChild(consentText);
  consent.appendChild(consentRow);
  panel.appendChild(header);
  panel.appendChild(log);
  panel.appendChild(consent);
  panel.appendChild(form);
  // On a phone a proactive message waits beside the launcher: the panel would fill the screen.
  var tease = el("div", { "class": "tease", role: "status", hidden: "" });
  var teaseText = el("button", { type: "button" });
  var teaseX = tr(el("button", { "class": "tx", type: "button" }, "×"), "dismiss", 0, "aria-label");
  tease.appendChild(teaseText);
  tease.appendChild(teaseX);
  wrap.appendChild(launcher);
  wrap.appendChild(tease);
  wrap.appendChild(panel);
  lab();
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
    // The launcher: an icon, a text, or both; never neither (the chat bubble then).
    var l = c.launcher || {}, lt = o.launcherText != null ? o.launcherText : l.text || "";
    var li = ICONS[o.launcherIcon || l.icon || "chat"] || (lt ? "" : ICONS.chat);
    if (li) icon.firstChild.setAttribute("d", li);
    icon.style.display = li ? "" : "none";
    ltext.textContent = lt;
    launcher.classList.toggle("pill", !!lt);
    W = c.strings || L;
    Array.prototype.forEach.call(root.querySelectorAll("*"), function (n) { if (n._t) tr(n, n._t[0], n._t[1], n._t[2]); });
    lab();
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
    var who = node.appendChild(el("span", { "class": author ? "who" : "sr" }));
    if (author) who.textContent = author.name; else tr(who, role === "user" ? "you" : "bot");
    var body = el("div");
    node.appendChild(body);
    if (role === "user") body.textContent = text; else render(text, body);
    node._body = body;
    log.appendChild(node);
    scroll();
    return node;
  }
  function files(node, list) {
    (list || []).forEach(function (f) {
      var a = el("a", { "class": "file", href: BASE + "/api/chat/attachments/" + f.id + "?" + q({ tenant: S.tenant, sessionId: S.sessionId, visitorId: S.visitorId }), target: "_blank", rel: "noopener" });
      if (/^image\//.test(f.contentType)) { var i = a.appendChild(el("img", { alt: f.name })); i.onload = scroll; i.src = a.href; } else a.textContent = f.name;
      node._body.appendChild(a);
    });
    scroll();
  }
  // k: the widget's words (a key), or the server's (text, already in the conversation's language).
  function notice(k, n) {
    var d = el("div", { "class": "notice", role: "status" });
    if (L[k]) tr(d, k, n); else d.textContent = k;
    log.appendChild(d);
    scroll();
    return d;
  }
  // The launcher's name says what it does, and how many replies came while the panel was closed.
  function lab() { tr(launcher, S.isOpen ? "close" : S.unread ? "openN" : "open", S.unread, "aria-label"); }
  function clearActions() {
    Array.prototype.forEach.call(log.querySelectorAll(".actions"), function (a) { a.remove(); });
  }
  function actions(list) {
    if (!list || !list.length) return;
    var row = tr(el("div", { "class": "actions", role: "group" }), "chips", 0, "aria-label");
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
    var row = el("div", { "class": "undelivered" });
    row.appendChild(tr(el("span"), "lost"));
    var retry = el("button", { "class": "retry", type: "button" });
    var until = Date.now() + wait * 1000;
    function tick() {
      var left = Math.ceil((until - Date.now()) / 1000);
      retry.disabled = left > 0;
      tr(retry, left > 0 ? "retryIn" : "retry", left);
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
  function send(text, extra, node, file) {
    text = String(text || "").trim();
    if (node) file = node._file;
    if ((!text && !file) || S.sending || S.destroyed || !S.config || pending()) return;
    clearActions();
    if (node) log.appendChild(node);
    else {
      node = bubble("user", text); node._text = text; node._meta = extra; node._file = file; S.talked = true;
      if (file) node._body.appendChild(el("span", { "class": "file" }, file.name));
    }
    setSending(true);
    var reply = el("div", { "class": "msg bot" });
    reply.appendChild(tr(el("span", { "class": "sr" }), "bot"));
    var body = tr(el("div", { "class": "dots" }), "dots", 0, "aria-label");
    body.appendChild(el("span")); body.appendChild(el("span")); body.appendChild(el("span"));
    reply.appendChild(body);
    log.appendChild(reply);
    scroll();
    var content = "", frame = 0, tenant = S.tenant, started = false;
    function paint() {
      frame = 0;
      body.className = "";
      body.removeAttribute("aria-label");
      body._t = null;
      body.textContent = "";
      render(content, body);
      scroll();
    }
    var ctrl = window.AbortController ? new AbortController() : null;
    S.controller = ctrl;
    var nav = navigator, quiet = S.config.honourDoNotTrack && (nav.doNotTrack === "1" || nav.globalPrivacyControl === true);
    var metadata = quiet ? {} : { landingPage: location.href.slice(0, 500), referrer: (document.referrer || "").slice(0, 500) };
    metadata.widgetLanguage = S.config.language || "en";
    for (var k in extra || {}) metadata[k] = extra[k];
    if (zone()) metadata.timezone = zone();
    // The proactive message replied to: stored before this message, as the agent's.
    if (S.pro) metadata.proactive = S.pro;
    var payload = { message: text, visitorId: S.visitorId, stream: true, metadata: metadata };
    if (S.sessionId) payload.sessionId = S.sessionId;
    if (S.config.consent) payload.consent = accepted();
    var form;
    if (file) { form = new FormData(); form.append("payload", JSON.stringify(payload)); form.append("file", file); }
    fetch(BASE + "/api/chat?" + q({ tenant: tenant }), {
      method: "POST", mode: "cors", credentials: "omit", signal: ctrl && ctrl.signal,
      headers: form ? { "Accept": "text/event-stream" } : { "Content-Type": "application/json", "Accept": "text/event-stream" },
      body: form || JSON.stringify(payload)
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
      if (res.status === 400 && file) {  // a file refused (type, size, count): say why, keep nothing
        reply.remove(); node.remove(); notice("fileNo"); return;
      }
      if (!res.ok || !res.body) {
        var e = new Error("HTTP " + res.status);
        e.wait = res.status === 429 ? parseInt(res.headers.get("Retry-After"), 10) || 0 : 0;
        throw e;
      }
      return readEvents(res.body, function (name, data) {
        if (tenant !== S.tenant) return;
        if (name === "message_start") {
          started = true;
          S.pro = 0;
          S.seen[data.id] = 1;
          setSession(data.sessionId);
          if (data.attachments) { var c = node._body.querySelector(".file"); if (c) c.remove(); files(node, data.attachments); }
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
          body.textContent = (content ? content + "\n\n" : "") + t("failed");
        }
      });
    }).catch(function (err) {
      if (S.destroyed || (err && err.name === "AbortError")) return;
      if (!started) { reply.remove(); undelivered(node, err.wait || 0); return; }
      // Delivered, but the reply broke off: what came stays.
      reply.classList.add("err");
      body.className = "";
      body.textContent = (content ? content + "\n\n" : "") + t("cut");
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
      if (!quiet) { clearActions(); notice("ended"); if (data.status === "closed") rate(); }
    } else if (data.notice) {
      // Who will reply, or who joined: stored state, so a reload (quiet) shows it again; once.
      var shown = log.querySelectorAll(".notice");
      if (!shown.length || shown[shown.length - 1].textContent !== data.notice) notice(data.notice);
    } else if (!quiet && data.status === "active" && before === "handed_off") {
      notice("back");
    }
  }
  // A person typing: shown for 6 s, or until their message.
  function typing(name) {
    untype();
    S.typing = notice("typing", name);
    S.typing.removeAttribute("role");
    S.typingOff = later(untype, 6000);
  }
  function untype() { clearTimeout(S.typingOff); if (S.typing) S.typing.remove(); S.typing = null; }
  function onLiveMessage(m, replay) {
    if (S.seen[m.id]) return;
    if (m.author) untype();
    if (!replay && (m.role !== "assistant" || !m.author)) return;  // the page already shows these
    S.seen[m.id] = 1;
    files(bubble(m.role, m.content, m.author), m.attachments);
    if (!S.isOpen && m.author) {
      S.unread += 1;
      badge.textContent = String(S.unread);
      badge.hidden = false;
      lab();
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

  // --- proactive messages (docs/widget.md): the first, in order, whose conditions all hold ----
  // A pattern without * is a prefix of the page's path (and query); with *, the whole of it;
  // one starting with http(s): the whole address.
  function pageIs(p) {
    var full = /^https?:/.test(p);
    return new RegExp("^" + p.split("*").map(function (x) { return x.replace(/[.+?^${}()|[\]\\]/g, "\\$&"); }).join(".*") + (/\*/.test(p) ? "$" : ""))
      .test(full ? location.href : location.pathname + location.search);
  }
  function proact() {
    var list = (S.config && S.config.proactive) || [], a = document.activeElement, wait = 0;
    if (S.fired || S.isOpen || sess("closed")) return;
    // Never while the visitor types: in the page's fields or in the widget's box.
    var typing = a === host ? !!input.value : a && (/^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName) || a.isContentEditable);
    for (var i = 0, t; (t = list[i]); i++) {
      if (sess("p" + t.id) || (t.url && !pageIs(t.url)) || (t.returning != null && t.returning !== !!sess("ret"))) continue;
      wait = 1;
      if (typing || performance.now() < t.seconds * 1000) continue;
      S.fired = 1;
      S.pro = t.id;
      sess("p" + t.id, "1");
      wrap.classList.add("pro");
      bubble("assistant", t.message);
      fetch(BASE + "/api/widget/proactive?" + q({ tenant: S.tenant, id: t.id }), { method: "POST", credentials: "omit" }).catch(function () {});
      if (!matchMedia("(max-width:480px)").matches) return api.open(1);
      teaseText.textContent = t.message.replace(/[*_`#]+/g, "");
      tease.hidden = false;
      badge.textContent = "1";
      badge.hidden = false;
      return;
    }
    if (wait) S.pt = later(proact, 500);
  }

  // --- the satisfaction rating (docs/widget.md, "Rating"): one tap, then a comment if they like --
  function rate() {
    if (!S.config.rating) return;
    var sid = S.sessionId, vid = S.visitorId, tenant = S.tenant, score;
    var box = log.appendChild(tr(el("div", { "class": "rate", role: "group" }), "rate", 0, "aria-label"));
    var said = box.appendChild(tr(el("p"), "rate")), row = box.appendChild(el("div"));
    var note = el("form", { hidden: "" }), text = note.appendChild(tr(el("textarea", { rows: "2", maxlength: "1000" }), "note", 0, "placeholder"));
    note.appendChild(tr(el("button", { "class": "accept", type: "submit" }), "noteSend"));
    box.appendChild(note);
    function post(body) {
      return fetch(BASE + "/api/chat/rating?" + q({ tenant: tenant, sessionId: sid, visitorId: vid }), {
        method: "POST", mode: "cors", credentials: "omit", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body)
      }).then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); });
    }
    ["good", "bad"].forEach(function (k) {
      var b = row.appendChild(tr(el("button", { "class": "thumb " + k, type: "button", "aria-pressed": "false" }), k, 0, "aria-label"));
      b.appendChild(svg("M1 21h4V9H1v12zm22-11a2 2 0 0 0-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.5-1.1L14.2 1 7.6 7.6C7.2 8 7 8.4 7 9v10a2 2 0 0 0 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7c.1-.3.2-.5.2-.8v-2z"));
      b.addEventListener("click", function () {
        post({ rating: k }).then(function () {
          score = k;
          Array.prototype.forEach.call(row.children, function (x) { x.setAttribute("aria-pressed", x === b); });
          tr(said, "thanks");
          note.hidden = false;
          text.focus();
        }).catch(function () {});
      });
    });
    on(note, "submit", function (e) {
      e.preventDefault();
      if (text.value.trim()) post({ rating: score, comment: text.value.trim() }).then(function () { note.remove(); }).catch(function () {});
    });
    scroll();
  }

  // --- configuration, tenant, session -------------------------------------------------------
  // The language asked for: the option, then the browser's; the server picks the first it
  // speaks, by base language (pt of pt-BR), else English.
  function configure(params, again) {
    params.tenant = S.tenant;
    params.language = [S.overrides.language].concat(navigator.languages || [navigator.language]).filter(Boolean).join(",");
    // Its refusals are readable from any page: a 403 names the origin to allow (docs/widget.md).
    return fetch(BASE + "/api/widget?" + q(params), { mode: "cors", credentials: "omit", cache: again ? "no-cache" : "default" })
      .then(function (r) {
        return r.json().then(function (body) {
          if (r.ok) return body;
          var e = new Error(body.error || "HTTP " + r.status);
          e.status = r.status;
          throw e;
        });
      });
  }
  // again: after an acceptance, or a refusal for want of one (the notice may be new).
  function start(fresh, again) {
    S.visitorId = load("visitor");
    if (sess("ret") == null) sess("ret", S.visitorId ? "1" : "");
    if (!S.visitorId) { S.visitorId = randomId(); store("visitor", S.visitorId); }
    if (fresh) store("session", null);
    S.sessionId = load("session");
    var tenant = S.tenant, params = { visitorId: S.visitorId }, a = accepted();
    if (a) params.consent = a.version;
    configure(params, again)
      .then(function (config) {
        if (tenant !== S.tenant || S.destroyed) return;
        S.config = config;
        setSending(S.sending);
        look();
        if (!host.isConnected) document.body.appendChild(host);
        if (S.sessionId && !pending()) connectLive();
        if (S.wantOpen) api.open();
        clearTimeout(S.pt);
        proact();
      })
      .catch(function (err) {
        if (tenant !== S.tenant || S.destroyed) return;
        if (window.console) console.warn("ServiceWidget: " + (err.status === 403 ? err.message : "no configuration for tenant " + tenant + " (" + err.message + ")"));
        if (host.isConnected) { S.failed = true; notice("off"); if (S.wantOpen) api.open(); }
      });
  }
  function reset() {
    if (S.controller) S.controller.abort();
    S.controller = null;
    closeLive();
    timers.forEach(clearTimeout);
    timers = [];
    setSending(false);
    S.failed = false; S.pro = 0; S.fired = 0; tease.hidden = true; S.seen = {}; S.status = null; S.deferred = []; S.talked = false; S.unread = 0; S.retries = 0;
    badge.hidden = true;
    untype();
    log.textContent = "";
  }

  // --- interaction ----------------------------------------------------------------------------
  on(launcher, "click", function () { if (S.isOpen) api.close(); else api.open(); });
  // Escape closes the open widget from its launcher too, not only from inside the panel.
  on(launcher, "keydown", function (e) { if (e.key === "Escape" && S.isOpen) { e.stopPropagation(); api.close(); } });
  on(closer, "click", function () { api.close(); });
  on(teaseText, "click", function () { api.open(); });
  on(teaseX, "click", function () { tease.hidden = badge.hidden = true; sess("closed", "1"); launcher.focus(); });
  on(form, "submit", function (e) {
    e.preventDefault();
    var text = input.value;
    if (!text.trim() || S.sending || !S.config) return;
    input.value = "";
    grow();
    send(text);
  });
  on(attBtn, "click", function () { picker.click(); });
  on(picker, "change", function () {
    var f = picker.files[0];
    picker.value = "";
    if (!f || S.sending || !S.config) return;
    var text = input.value;
    input.value = "";
    grow();
    send(text, null, null, f);
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
    // quiet: a proactive message opened it, and the focus stays where the visitor has it.
    open: function (quiet) {
      if (S.destroyed) return;
      S.wantOpen = true;
      if (!S.config && !S.failed) return;
      S.isOpen = true;
      tease.hidden = true;
      panel.hidden = false;
      wrap.classList.add("open");
      launcher.setAttribute("aria-expanded", "true");
      S.unread = 0;
      lab();
      badge.hidden = true;
      scroll();
      if (quiet !== 1) (pending() ? acceptBtn : input).focus();
    },
    close: function () {
      if (S.destroyed) return;
      S.wantOpen = false;
      // No proactive message after that, in this tab.
      if (S.isOpen) sess("closed", "1");
      var inside = root.activeElement != null;
      S.isOpen = false;
      panel.hidden = true;
      wrap.classList.remove("open");
      launcher.setAttribute("aria-expanded", "false");
      lab();
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
      ["position", "primaryColor", "textColor", "title", "greeting", "launcherIcon", "launcherText", "language"].forEach(function (k) {
        if (k in options) S.overrides[k] = options[k];
      });
      look();
      // Another language: its words come with the configuration in it (no visit is counted).
      var tenant = S.tenant, asked = S.asked = (S.asked || 0) + 1;
      if ("language" in options && S.config) configure({}).then(function (c) {
        if (tenant === S.tenant && asked === S.asked && !S.destroyed) { S.config = c; look(); }
      }).catch(function () {});
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
