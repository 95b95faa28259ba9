/* The knowledge base's page (templates/dashboard/knowledge.html, loaded only while a document is
 * processing): rows still processing refresh themselves from the page fetched again; without
 * scripts a reload shows the same. A file, not an inline script, so that the
 * Content-Security-Policy's script-src 'self' allows it (docs/dashboard.md). */
(function () {
  "use strict";
  var tries = 0;
  function pending() { return document.querySelectorAll("tr[data-status='processing']"); }
  function poll() {
    if (!pending().length || ++tries > 200) return;
    fetch(location.href, {credentials: "same-origin", headers: {"Accept": "text/html"}})
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        pending().forEach(function (row) {
          var now = fresh.querySelector("tr[data-document='" + row.dataset.document + "']");
          if (now && now.dataset.status !== "processing") row.replaceWith(document.importNode(now, true));
        });
      })
      .catch(function () {})
      .then(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 3000);
})();
