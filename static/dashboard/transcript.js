/* The live transcript of a conversation's page (templates/dashboard/conversation_detail.html):
 * new messages and status changes arrive over Server-Sent Events from the URL in the
 * transcript's data-events attribute, which only an open conversation's page sets. A file, not an
 * inline script, so that the Content-Security-Policy's script-src 'self' allows it (docs/dashboard.md).
 * Progressive enhancement: the page works without it (reload to see new messages). */
(function () {
  "use strict";
  var list = document.getElementById("transcript");
  var url = list && list.getAttribute("data-events");
  if (!window.EventSource || !url) return;
  list.scrollTop = list.scrollHeight;
  var src = new EventSource(url);
  src.addEventListener("message", function (e) {
    var m = JSON.parse(e.data);
    if (list.querySelector('[data-id="' + m.id + '"]')) return;
    var b = document.createElement("div");
    b.className = "bubble " + (m.author ? "human" : m.role);
    b.setAttribute("data-id", m.id);
    var meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = (m.role === "user" ? "Visitor" : m.author ? m.author.name : "Agent") + " · now";
    b.appendChild(meta);
    var text = document.createElement("div");
    text.className = "text";
    text.textContent = m.content;
    b.appendChild(text);
    if (m.role !== "user" && window.DashboardMarkdown) window.DashboardMarkdown.render(text);
    list.appendChild(b);
    list.scrollTop = list.scrollHeight;
  });
  src.addEventListener("status", function (e) {
    var s = JSON.parse(e.data), pill = document.getElementById("status");
    pill.textContent = s.status.replace("_", " ") + " (reload for actions)";
    pill.className = "pill " + s.status;
    if (s.status === "closed" || s.status === "expired") src.close();
  });
})();
