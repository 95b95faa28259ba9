/* The leads pages (templates/dashboard/leads.html, lead_bulk_job.html, lead_import_progress.html).
 * The pages work without it; it adds, by attributes only (the Content-Security-Policy allows no
 * inline script: docs/dashboard.md):
 *
 *   <select data-autosubmit>   a saved view is shown as soon as it is chosen (its Show button
 *                              is then hidden).
 *   <form id="bulk">           the bulk bar: only the value field of the chosen action shows;
 *                              [data-check-all] checks every row of the page, and once all are
 *                              checked offers every lead matching the filter ([data-select-all]);
 *                              a delete asks first.
 *   [data-progress="url"]      a job or an import that runs: its progress is fetched from the
 *                              JSON at url every second, and the page reloaded when it is over.
 */
(function () {
  "use strict";

  function each(selector, fn, root) {
    Array.prototype.forEach.call((root || document).querySelectorAll(selector), fn);
  }

  each("select[data-autosubmit]", function (select) {
    each("[data-autosubmit-button]", function (b) { b.hidden = true; }, select.form);
    select.addEventListener("change", function () { select.form.submit(); });
  });

  var bulk = document.getElementById("bulk");
  if (bulk) {
    var action = bulk.querySelector("[name=action]");
    var scope = bulk.querySelector("[name=scope]");
    var all = bulk.querySelector("[data-check-all]");
    var notice = bulk.querySelector("[data-select-all]");
    var total = parseInt(bulk.getAttribute("data-total"), 10) || 0;
    var boxes = function () { return bulk.querySelectorAll("input[name=lead]"); };
    var checked = function () { return bulk.querySelectorAll("input[name=lead]:checked"); };

    var showValue = function () {
      each("[data-for]", function (field) {
        field.hidden = field.getAttribute("data-for").split(" ").indexOf(action.value) < 0;
      }, bulk);
    };
    action.addEventListener("change", showValue);
    showValue();

    var offer = function () {
      var onPage = boxes().length;
      var every = onPage > 0 && checked().length === onPage;
      if (all) {
        all.checked = every;
        all.indeterminate = !every && checked().length > 0;
      }
      if (scope.value === "all") {
        notice.hidden = false;
        notice.textContent = "All " + total + " leads matching the filter are selected. ";
        var clear = document.createElement("button");
        clear.type = "button";
        clear.className = "linkish-dark";
        clear.textContent = "Select only the checked ones";
        clear.addEventListener("click", function () { scope.value = "checked"; offer(); });
        notice.appendChild(clear);
      } else if (every && total > onPage) {
        notice.hidden = false;
        notice.textContent = "All " + onPage + " leads on this page are checked. ";
        var more = document.createElement("button");
        more.type = "button";
        more.className = "linkish-dark";
        more.textContent = "Select all " + total + " leads matching the filter";
        more.addEventListener("click", function () { scope.value = "all"; offer(); });
        notice.appendChild(more);
      } else {
        notice.hidden = true;
      }
    };
    if (all) {
      all.hidden = false;
      all.addEventListener("change", function () {
        each("input[name=lead]", function (box) { box.checked = all.checked; }, bulk);
        if (!all.checked) scope.value = "checked";
        offer();
      });
    }
    bulk.addEventListener("change", function (event) {
      if (event.target.name === "lead" || event.target === scope) offer();
    });
    offer();

    bulk.addEventListener("submit", function (event) {
      var count = scope.value === "all" ? total : checked().length;
      if (count === 0) {
        event.preventDefault();
        window.alert("Check the leads to change first.");
        return;
      }
      if (action.value === "delete" && !window.confirm(
          "Delete " + count + " lead" + (count === 1 ? "" : "s") + "? Each person is erased " +
          "everywhere (conversations, meetings, emails); this cannot be undone.")) {
        event.preventDefault();
      }
    });
  }

  each("[data-progress]", function (box) {
    if (box.getAttribute("data-done") === "true") return;
    var url = box.getAttribute("data-progress");
    var bar = box.querySelector("progress");
    var set = function (selector, value) {
      var el = box.querySelector(selector);
      if (el && value !== undefined) el.textContent = value;
    };
    var poll = function () {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (state) {
          if (!state) return setTimeout(poll, 3000);
          bar.value = state.percent;
          bar.textContent = state.percent + "%";
          set("[data-processed]", state.processed);
          ["created", "updated", "skipped", "failed"].forEach(function (name) {
            set("[data-count=" + name + "]", state[name]);
          });
          if (state.done) { window.location.reload(); return; }
          setTimeout(poll, 1000);
        })
        .catch(function () { setTimeout(poll, 3000); });
    };
    setTimeout(poll, 500);
  });
})();
