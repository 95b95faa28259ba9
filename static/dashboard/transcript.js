/* The live transcript of a conversation's page (templates/dashboard/conversation_detail.html):
 * new messages and status changes arrive over Server-Sent Events from the URL in the
 * transcript's data-events attribute, which only an open conversation's page sets. A file, not an
 * inline script, so that the Content-Security-Policy's script-src 'self' allows it (docs/dashboard.md).
 * Progressive enhancement: the page works without it (reload to see new messages).
 *
 * Also (docs/dashboard.md, "Inbox"): "The visitor is typing…" for a few seconds after each
 * `typing` event of the visitor; while the person who has the conversation types a reply, a POST
 * to the reply form's data-typing at most every TYPING_EVERY_MS (the visitor's widget shows it);
 * and messages that arrive while the page is in view count as read (POST data-read, seen=N). */
(function () {
  "use strict";
  var TYPING_EVERY_MS = 2500;
  var TYPING_SHOWN_MS = 6000;
  var list = document.getElementById("transcript");
  var url = list && list.getAttribute("data-events");
  if (!window.EventSource || !url) return;
  list.scrollTop = list.scrollHeight;

  function csrf() {
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }
  function post(target, body) {
    return fetch(target, { method: "POST", credentials: "same-origin", body: body,
                           headers: { "X-CSRFToken": csrf() } }).catch(function () {});
  }

  // Read markers: how many messages this page has shown, reported when it is in view.
  var readUrl = list.getAttribute("data-read");
  var seen = Number(list.getAttribute("data-seen")) || 0, reported = seen, readTimer = 0;
  function report() {
    if (!readUrl || seen <= reported || document.visibilityState !== "visible") return;
    clearTimeout(readTimer);
    readTimer = setTimeout(function () {
      var body = new FormData();
      body.append("seen", String(seen));
      reported = seen;
      post(readUrl, body);
    }, 500);
  }
  document.addEventListener("visibilitychange", report);

  // The visitor typing.
  var typing = document.getElementById("typing"), typingTimer = 0;
  function typingOff() { if (typing) typing.hidden = true; }

  // A file of a message (docs/dashboard.md, "Attachments"): a thumbnail of an image, a link
  // that downloads anything else, as the page's template draws them.
  var fileUrl = list.getAttribute("data-attachment") || "";
  function attachment(f) {
    var href = fileUrl.replace("00000000-0000-0000-0000-000000000000", f.id);
    var a = document.createElement("a");
    a.href = href;
    if (/^image\//.test(f.contentType)) {
      a.className = "attachment image";
      a.target = "_blank";
      a.rel = "noopener";
      var img = document.createElement("img");
      img.src = href;
      img.alt = f.name;
      a.appendChild(img);
    } else {
      a.className = "attachment file";
      a.setAttribute("download", f.name);
      var name = document.createElement("span");
      name.className = "attachment-name";
      name.textContent = f.name;
      var size = document.createElement("span");
      size.className = "muted";
      size.textContent = " PDF · " + Math.max(1, Math.round(f.size / 1024)) + " KB";
      a.appendChild(name);
      a.appendChild(size);
    }
    return a;
  }

  var src = new EventSource(url);
  src.addEventListener("message", function (e) {
    var m = JSON.parse(e.data);
    if (list.querySelector('[data-id="' + m.id + '"]')) return;
    if (m.role === "user") typingOff();
    var b = document.createElement("div");
    b.className = "bubble " + (m.author ? "human" : m.role);
    b.setAttribute("data-id", m.id);
    b.id = "m-" + m.id;
    var meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = (m.role === "user" ? "Visitor" : m.author ? m.author.name : "Agent") + " · now";
    b.appendChild(meta);
    if (m.content) {
      var text = document.createElement("div");
      text.className = "text";
      text.textContent = m.content;
      b.appendChild(text);
      if (m.role !== "user" && window.DashboardMarkdown) window.DashboardMarkdown.render(text);
    }
    (m.attachments || []).forEach(function (f) { b.appendChild(attachment(f)); });
    list.appendChild(b);
    list.scrollTop = list.scrollHeight;
    seen += 1;
    report();
  });
  src.addEventListener("status", function (e) {
    var s = JSON.parse(e.data), pill = document.getElementById("status");
    pill.textContent = s.status.replace("_", " ") + " (reload for actions)";
    pill.className = "pill " + s.status;
    if (s.status === "closed" || s.status === "expired") { typingOff(); src.close(); }
  });
  src.addEventListener("typing", function (e) {
    var t = JSON.parse(e.data);
    if (t.role !== "user" || !typing) return;
    typing.textContent = "The visitor is typing…";
    typing.hidden = false;
    clearTimeout(typingTimer);
    typingTimer = setTimeout(typingOff, TYPING_SHOWN_MS);
  });

  // The person's own typing, told to the visitor.
  var form = document.getElementById("reply-form");
  var typingUrl = form && form.getAttribute("data-typing");
  var box = form && form.querySelector("textarea");
  var sent = 0;
  if (typingUrl && box) {
    box.addEventListener("input", function () {
      var now = Date.now();
      if (!box.value.trim() || now - sent < TYPING_EVERY_MS) return;
      sent = now;
      post(typingUrl);
    });
  }
})();
