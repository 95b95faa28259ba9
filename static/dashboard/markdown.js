/* The transcript's Markdown, rendered by the widget's own renderer (docs/dashboard.md).
 *
 * The page loads /widget.js without data-tenant first: it then shows no widget and asks nothing
 * of the server, and only exposes ServiceWidget._render, the renderer that builds a message's
 * DOM nodes in the visitor's widget (text never becomes HTML; links only http(s) and mailto).
 * Each element marked data-markdown holds its message as plain text, readable without
 * JavaScript; this script renders that text into the element, once. The live transcript calls
 * DashboardMarkdown.render on the messages it adds. No inline handler: a later Content Security
 * Policy allows this file as it is. */
(function () {
  "use strict";
  function render(node) {
    var widget = window.ServiceWidget;
    if (!node || !widget || typeof widget._render !== "function") return;
    if (node.hasAttribute("data-rendered")) return;
    var rendered = widget._render(node.textContent);
    node.textContent = "";
    while (rendered.firstChild) node.appendChild(rendered.firstChild);
    node.setAttribute("data-rendered", "");
  }
  function renderAll(root) {
    Array.prototype.forEach.call((root || document).querySelectorAll("[data-markdown]"), render);
  }
  window.DashboardMarkdown = { render: render, renderAll: renderAll };
  renderAll(document);
})();
