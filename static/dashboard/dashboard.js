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
 *   <button type="button" data-menu-toggle aria-expanded aria-controls>  the header's Menu on a
 *       narrow screen: opens and closes the menu it controls; Escape closes it and gives the
 *       focus back to the button.
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

  function menu() {
    var toggle = document.querySelector("[data-menu-toggle]");
    if (!toggle) return;
    var header = toggle.closest("header");
    function set(open) {
      toggle.setAttribute("aria-expanded", String(open));
      header.classList.toggle("menu-open", open);
    }
    toggle.addEventListener("click", function () {
      set(toggle.getAttribute("aria-expanded") !== "true");
    });
    document.addEventListener("keydown", function (event) {
      if (event.key !== "Escape" || toggle.getAttribute("aria-expanded") !== "true") return;
      set(false);
      toggle.focus();
    });
  }

  function ready() {
    reveal();
    menu();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();

/* Presence and live notifications (docs/dashboard.md, "Availability and routing"), on every
 * page of a signed-in person (<body data-live data-activity data-activity-every>):
 *
 *   - the page holds the person's live stream (EventSource on data-live): while any of their
 *     pages is open they count as there; the last one closed, they are offline;
 *   - it reports activity (a key, a click, the pointer, scrolling, the page coming into view)
 *     with a POST to data-activity, at most every data-activity-every seconds, so that idleness
 *     turns them away and activity brings them back;
 *   - "presence" events set the status in the header; a "handoff" event (a conversation given
 *     to them) shows a toast linking to it, adds one to the count beside Conversations, plays a
 *     short tone when Sound is on (kept in localStorage), and raises a browser notification when
 *     the person allowed them (the "Notify me" button asks); a "mention" event (a teammate's
 *     note names them) shows a toast with the note's beginning and a link to it.
 */
(function () {
  "use strict";

  var body = document.body;
  var liveUrl = body && body.getAttribute("data-live");
  if (!liveUrl || !window.EventSource) return;
  var activityUrl = body.getAttribute("data-activity");
  var every = Math.max(1, Number(body.getAttribute("data-activity-every")) || 60) * 1000;
  var SOUND_KEY = "dashboard.sound";
  var LABELS = { online: "Online", away: "Away", offline: "Offline" };

  function csrf() {
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  var lastSent = 0;
  var pending = false;
  function active() {
    var now = Date.now();
    if (pending || now - lastSent < every) return;
    pending = true;
    lastSent = now;
    fetch(activityUrl, { method: "POST", credentials: "same-origin",
                         headers: { "X-CSRFToken": csrf() } })
      .catch(function () { lastSent = 0; })
      .then(function () { pending = false; });
  }
  ["keydown", "mousedown", "mousemove", "wheel", "touchstart", "scroll"].forEach(function (type) {
    window.addEventListener(type, active, { passive: true });
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") active();
  });

  function showStatus(status) {
    document.querySelectorAll("[data-presence-label]").forEach(function (el) {
      el.textContent = LABELS[status] || status;
    });
    document.querySelectorAll("[data-presence-dot]").forEach(function (el) {
      el.className = "status-dot " + status;
    });
    document.querySelectorAll("[data-presence]").forEach(function (button) {
      button.setAttribute("aria-pressed", String(button.getAttribute("data-presence") === status));
    });
    body.setAttribute("data-status", status);
  }

  function soundOn() {
    try { return window.localStorage.getItem(SOUND_KEY) === "on"; } catch (e) { return false; }
  }

  function tone() {
    var Context = window.AudioContext || window.webkitAudioContext;
    if (!Context) return;
    try {
      var audio = new Context();
      var oscillator = audio.createOscillator();
      var gain = audio.createGain();
      oscillator.frequency.value = 880;
      gain.gain.value = 0.08;
      oscillator.connect(gain);
      gain.connect(audio.destination);
      oscillator.start();
      oscillator.stop(audio.currentTime + 0.18);
    } catch (e) { /* no sound where the browser refuses it */ }
  }

  function bumpUnread() {
    document.querySelectorAll("[data-unread]").forEach(function (badge) {
      badge.textContent = String((Number(badge.textContent) || 0) + 1);
      badge.hidden = false;
    });
  }

  // A toast: its key (data-toast), a title, an optional line, and a link.
  function toast(key, heading, detail, url, linkText) {
    var box = document.querySelector("[data-toasts]");
    if (!box) return;
    var item = document.createElement("div");
    item.className = "toast";
    item.setAttribute("data-toast", key);
    var close = document.createElement("button");
    close.type = "button";
    close.setAttribute("aria-label", "Dismiss");
    close.textContent = "×";
    close.addEventListener("click", function () { item.remove(); });
    var title = document.createElement("div");
    title.textContent = heading;
    var link = document.createElement("a");
    link.href = url;
    link.textContent = linkText;
    item.appendChild(close);
    item.appendChild(title);
    if (detail) {
      var line = document.createElement("div");
      line.className = "small";
      line.textContent = detail;
      item.appendChild(line);
    }
    item.appendChild(link);
    box.appendChild(item);
  }

  function notify(data) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    try {
      var shown = new Notification("New handoff: " + data.who, { body: data.reason || "", tag: data.conversation });
      shown.onclick = function () { window.focus(); window.location.href = data.url; };
    } catch (e) { /* some browsers only notify from a service worker */ }
  }

  var stream = new EventSource(liveUrl);
  stream.addEventListener("presence", function (event) {
    showStatus(JSON.parse(event.data).status);
  });
  stream.addEventListener("handoff", function (event) {
    var data = JSON.parse(event.data);
    toast(data.conversation, "New handoff: " + data.who, data.reason, data.url, "Open the conversation");
    bumpUnread();
    if (soundOn()) tone();
    notify(data);
  });
  // A teammate mentioned this person in a note (docs/dashboard.md, "Inbox").
  stream.addEventListener("mention", function (event) {
    var data = JSON.parse(event.data);
    toast(data.note, data.author + " mentioned you: " + data.about, data.excerpt, data.url, "Open the note");
    if (soundOn()) tone();
  });
  window.addEventListener("pagehide", function () { stream.close(); });

  function setup() {
    var sound = document.querySelector("[data-sound-toggle]");
    if (sound) {
      var paint = function () {
        var on = soundOn();
        sound.setAttribute("aria-pressed", String(on));
        sound.textContent = on ? "Sound on" : "Sound off";
      };
      paint();
      sound.hidden = false;
      sound.addEventListener("click", function () {
        try { window.localStorage.setItem(SOUND_KEY, soundOn() ? "off" : "on"); } catch (e) { return; }
        paint();
      });
    }
    var ask = document.querySelector("[data-notify-permission]");
    if (ask && "Notification" in window && Notification.permission === "default") {
      ask.hidden = false;
      ask.addEventListener("click", function () {
        Notification.requestPermission().then(function () { ask.hidden = true; });
      });
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
