/* The inbox's keyboard shortcuts (docs/dashboard.md, "Keyboard shortcuts"), on the list of
 * conversations and on a conversation's page:
 *
 *   j / k   the next / previous conversation: on the list, moves the selection (Enter opens it);
 *           on a conversation's page, opens the next / previous one of the list it was opened
 *           from (in this tab)
 *   r       the reply box (on a conversation you have)
 *   a       assign to me (Take over)
 *   e       close the conversation
 *   /       search the conversations' messages
 *   ?       this list (Escape closes it)
 *
 * Never while the focus is in a field (input, textarea, select, contenteditable), and never with
 * Ctrl, Alt or ⌘: those keys are the browser's and the field's.
 */
(function () {
  "use strict";

  var ORDER = "inbox-order";
  var help = document.getElementById("shortcuts");
  var rows = Array.prototype.slice.call(document.querySelectorAll("[data-conversation-url]"));
  var current = -1;

  function stored() {
    try { return JSON.parse(sessionStorage.getItem(ORDER)) || []; } catch (e) { return []; }
  }
  // The list remembers its order, for j and k on the conversations opened from it.
  if (rows.length) {
    try {
      sessionStorage.setItem(ORDER, JSON.stringify(rows.map(function (r) {
        return r.getAttribute("data-conversation-url").split("#")[0];
      })));
    } catch (e) { /* no storage: j and k work on the list only */ }
  }

  function typing(target) {
    return target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
  }

  function select(index) {
    if (!rows.length) return;
    current = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach(function (row, i) { row.classList.toggle("selected", i === current); });
    var link = rows[current].querySelector("a");
    if (link) link.focus();
  }

  function step(delta) {
    if (rows.length) { select(current < 0 ? (delta > 0 ? 0 : rows.length - 1) : current + delta); return; }
    var here = document.querySelector("[data-conversation-here]");
    if (!here) return;
    var order = stored(), at = order.indexOf(here.getAttribute("data-conversation-here"));
    var next = at < 0 ? null : order[at + delta];
    if (next) window.location.assign(next);
  }

  function submit(name) {
    var form = document.querySelector("form[data-shortcut='" + name + "']");
    if (!form) return false;
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
    return true;
  }

  function toggleHelp() {
    if (!help) return;
    if (help.open) help.close(); else help.showModal();
  }

  var actions = {
    j: function () { step(1); },
    k: function () { step(-1); },
    r: function () {
      var box = document.querySelector("#reply-form textarea");
      if (box) box.focus();
    },
    a: function () { submit("assign"); },
    e: function () { submit("close"); },
    "/": function () {
      var search = document.querySelector("[data-shortcut='search']");
      if (search) { search.focus(); search.select(); } else {
        var list = document.querySelector("[data-inbox-url]");
        if (list) window.location.assign(list.getAttribute("data-inbox-url") + "#search");
      }
    },
    "?": toggleHelp
  };

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    if (help && help.open && event.key !== "?") return;  // the dialog has the keyboard
    var action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });

  // Opened by "/" from a conversation: the search box, ready to type in.
  if (window.location.hash === "#search") {
    var search = document.querySelector("[data-shortcut='search']");
    if (search) search.focus();
  }
})();
