/* The dashboard's one shared script (templates/dashboard/base.html loads it on every page). The
 * pages work without it; it only adds behaviour named by attributes, never by inline handlers,
 * so that a strict Content-Security-Policy (script-src 'self') keeps it working:
 *
 *   <button type="button" data-copy="#new-key" hidden>Copy</button>
 *       copies the text of the element the selector names (the value of a field) to the
 *       clipboard and says "Copied" for two seconds. Hidden in the markup: without this
 *       script there is nothing to press, and the text stays selectable by hand.
 *   <button data-confirm="Revoke key “CRM sync”? …">Revoke</button>  (or <form data-confirm>)
 *       asks first; declined, the form is not sent.
 *   <button type="button" data-widget-open>  opens the chat widget of the preview page.
 */
(function () {
  "use strict";

  var SHOWN_MS = 2000;

  function announce(text) {
    var live = document.getElementById("dashboard-announce");
    if (!live) {
      live = document.createElement("p");
      live.id = "dashboard-announce";
      live.className = "sr";
      live.setAttribute("role", "status");
      document.body.appendChild(live);
    }
    live.textContent = "";
    live.textContent = text;
  }

  function textOf(el) {
    return /^(INPUT|TEXTAREA)$/.test(el.tagName) ? el.value : el.textContent.trim();
  }

  function selectText(el) {
    if (el.select) { el.select(); return; }
    var range = document.createRange();
    range.selectNodeContents(el);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  // Where the Clipboard API is missing (a page served over plain HTTP), the old command still
  // copies the selection; when even that fails the text is left selected for Ctrl+C.
  function copyBySelection(el) {
    selectText(el);
    try { return document.execCommand("copy"); } catch (e) { return false; }
  }

  function show(button, copied) {
    if (!button.hasAttribute("data-label")) button.setAttribute("data-label", button.textContent);
    var label = button.getAttribute("data-label");
    button.textContent = copied ? "Copied" : "Press Ctrl+C";
    button.classList.toggle("copied", copied);
    announce(copied ? "Copied to the clipboard" : "Selected: press Ctrl+C (⌘C) to copy");
    clearTimeout(button._copyTimer);
    button._copyTimer = setTimeout(function () {
      button.textContent = label;
      button.classList.remove("copied");
    }, SHOWN_MS);
  }

  function copy(button) {
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = textOf(source);
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { show(button, true); },
        function () { show(button, copyBySelection(source)); });
    } else {
      show(button, copyBySelection(source));
    }
  }

  function ask(el) {
    return window.confirm(el.getAttribute("data-confirm"));
  }

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    var confirmed = target.closest("[data-confirm]");
    // A form's own question is asked on submit, whichever button sent it.
    if (confirmed && confirmed.tagName !== "FORM" && !ask(confirmed)) {
      event.preventDefault();
      event.stopImmediatePropagation();
      return;
    }
    var copier = target.closest("[data-copy]");
    if (copier) {
      event.preventDefault();
      copy(copier);
      return;
    }
    if (target.closest("[data-widget-open]") && window.ServiceWidget) window.ServiceWidget.open();
  });

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.hasAttribute("data-confirm") && !ask(form)) {
      event.preventDefault();
    }
  });

  function reveal() {
    document.querySelectorAll("[data-copy][hidden]").forEach(function (button) {
      button.hidden = false;
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", reveal);
  else reveal();
})();
