/* Suggestions while typing (docs/dashboard.md, "Inbox"): "/" and a shortcut in the reply box
 * offers the tenant's canned replies (filled for this conversation by the server), "@" in a note
 * offers the teammates to mention. Each box is a field block (.suggest-field) holding a textarea
 * and a hidden list of what it may offer:
 *
 *   <ul hidden data-suggestions="/"><li data-key="pricing" data-label="/pricing">text</li></ul>
 *
 * The list opens under the box when the word before the caret starts with the list's character,
 * narrowed to the keys that start with what follows it; Arrow Up/Down choose, Enter or Tab put the
 * item's text in place of the word, Escape closes; a click does the same. Without this script the
 * boxes are plain text areas (a note's @handle still mentions). */
(function () {
  "use strict";
  var MAX = 8;
  var count = 0;

  function setup(field) {
    var box = field.querySelector("textarea");
    var source = field.querySelector("[data-suggestions]");
    if (!box || !source) return;
    var trigger = source.getAttribute("data-suggestions");
    var items = Array.prototype.map.call(source.querySelectorAll("li"), function (li) {
      return { key: li.getAttribute("data-key"), label: li.getAttribute("data-label"), text: li.textContent };
    });
    var id = "suggest-" + (++count);
    var list = document.createElement("div");
    list.className = "suggest";
    list.id = id;
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", source.getAttribute("aria-label") || "Suggestions");
    list.hidden = true;
    field.appendChild(list);
    box.setAttribute("role", "combobox");
    box.setAttribute("aria-autocomplete", "list");
    box.setAttribute("aria-controls", id);
    box.setAttribute("aria-expanded", "false");
    var shown = [], active = 0, word = null;

    // The word being typed before the caret, if it starts with the trigger: {start, typed}.
    function current() {
      var before = box.value.slice(0, box.selectionStart);
      var m = /(^|\s)(\S*)$/.exec(before);
      var token = m ? m[2] : "";
      if (token.charAt(0) !== trigger || box.selectionStart !== box.selectionEnd) return null;
      return { start: before.length - token.length, typed: token.slice(1).toLowerCase() };
    }

    function close() {
      list.hidden = true;
      box.setAttribute("aria-expanded", "false");
      box.removeAttribute("aria-activedescendant");
      shown = [];
      word = null;
    }

    function paint() {
      list.textContent = "";
      shown.forEach(function (item, i) {
        var option = document.createElement("div");
        option.id = id + "-" + i;
        option.className = "suggest-option";
        option.setAttribute("role", "option");
        option.setAttribute("aria-selected", String(i === active));
        var name = document.createElement("strong");
        name.textContent = item.label;
        option.appendChild(name);
        if (trigger === "/") {
          var preview = document.createElement("span");
          preview.className = "muted small";
          preview.textContent = " " + item.text.slice(0, 80) + (item.text.length > 80 ? "…" : "");
          option.appendChild(preview);
        }
        // mousedown, not click: the box keeps the focus and the caret.
        option.addEventListener("mousedown", function (e) { e.preventDefault(); choose(i); });
        list.appendChild(option);
      });
      box.setAttribute("aria-activedescendant", id + "-" + active);
    }

    function update() {
      word = current();
      if (!word) { close(); return; }
      shown = items.filter(function (item) { return item.key.indexOf(word.typed) === 0; }).slice(0, MAX);
      if (!shown.length) { close(); word = null; return; }
      active = Math.min(active, shown.length - 1);
      list.hidden = false;
      box.setAttribute("aria-expanded", "true");
      paint();
    }

    function choose(i) {
      var item = shown[i], at = word;
      if (!item || !at) return;
      var end = box.selectionStart;
      box.value = box.value.slice(0, at.start) + item.text + box.value.slice(end);
      var caret = at.start + item.text.length;
      box.setSelectionRange(caret, caret);
      close();
      box.focus();
      box.dispatchEvent(new Event("input", { bubbles: true }));
    }

    box.addEventListener("input", function () { active = 0; update(); });
    box.addEventListener("click", update);
    box.addEventListener("blur", function () { setTimeout(close, 100); });
    box.addEventListener("keydown", function (e) {
      if (list.hidden) return;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        active = (active + (e.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
        paint();
      } else if (e.key === "Enter" || e.key === "Tab") {
        e.preventDefault();
        choose(active);
      } else if (e.key === "Escape") {
        e.preventDefault();
        e.stopPropagation();
        close();
      }
    });
  }

  document.querySelectorAll(".suggest-field").forEach(setup);
})();
