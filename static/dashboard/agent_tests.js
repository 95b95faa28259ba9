/* A test set's page (templates/dashboard/agent_test_set.html, loaded only while the set runs):
 * the run's section refreshes itself from the page fetched again, with how many questions were
 * asked, until the results are there; without scripts a reload shows the same. A file, not an
 * inline script, so that the Content-Security-Policy's script-src 'self' allows it
 * (docs/dashboard.md). */
(function () {
  "use strict";
  var tries = 0;
  function running() { return document.querySelector("#run[data-run='running']"); }
  function poll() {
    if (!running() || ++tries > 900) return;
    fetch(location.pathname, {credentials: "same-origin", headers: {"Accept": "text/html"}})
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("#run");
        var now = running();
        if (fresh && now) now.replaceWith(document.importNode(fresh, true));
      })
      .catch(function () {})
      .then(function () { setTimeout(poll, 2000); });
  }
  setTimeout(poll, 2000);
})();
