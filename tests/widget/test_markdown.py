"""The widget's Markdown renderer over hostile and odd text, in headless Chromium: whatever a model,
a rep or a greeting says, rendering finishes, builds only harmless elements, links only http(s)
and mailto addresses, and keeps every word.

The page loads ``static/widget/widget.js`` as a site would (no ``data-tenant``: it renders
nothing and asks nothing of a server) and calls ``ServiceWidget._render``. Adding a case is one
line in ``CORPUS``: the Markdown and the hrefs of the links it must produce, in order."""

from __future__ import annotations

import re

import pytest

from tests.browser import browser
from tests.live import ROOT

pytestmark = pytest.mark.live  # Chromium

WIDGET = ROOT / "static" / "widget" / "widget.js"
ORIGIN = "http://site.test"
PRICING = "https://example.com/pricing"

CORPUS: list[tuple[str, list[str]]] = [
    # Bare URLs, wherever a sentence puts them.
    (PRICING, [PRICING]),
    (f"Our plans: {PRICING}", [PRICING]),
    (f"Our plans are at {PRICING}.", [PRICING]),
    (f"(see {PRICING})", [PRICING]),
    (f"See {PRICING}, or {PRICING}/faq!", [PRICING, PRICING + "/faq"]),
    (f"Really? {PRICING}?", [PRICING]),
    (f'"{PRICING}"', [PRICING]),
    ("https://en.wikipedia.org/wiki/Lead_(marketing) explains it", ["https://en.wikipedia.org/wiki/Lead_(marketing)"]),
    ("http://a.example/b?c=d&e=f#g", ["http://a.example/b?c=d&e=f#g"]),
    (f"**{PRICING}**", [PRICING]),
    (f"*{PRICING}*", [PRICING]),
    (f"`{PRICING}`", []),
    (f"- Pricing: {PRICING}.\n- Docs: https://example.com/docs", [PRICING, "https://example.com/docs"]),
    (f"Hi!\n\n{PRICING}\n\nThanks", [PRICING]),
    ("https://", []),
    ("https://example.com/\"onmouseover=\"alert(1)", ['https://example.com/"onmouseover="alert(1)']),
    # Markdown links.
    (f"[pricing]({PRICING})", [PRICING]),
    (f"[**Pricing** page]({PRICING}).", [PRICING]),
    (f"[{PRICING}](https://example.com/other)", ["https://example.com/other"]),
    ("[mail us](mailto:sales@example.com)", ["mailto:sales@example.com"]),
    ("[wiki](https://en.wikipedia.org/wiki/Lead_(marketing))", ["https://en.wikipedia.org/wiki/Lead_(marketing)"]),
    (f"[unbalanced]({PRICING}", [PRICING]),
    # Other schemes never become links.
    ("[click](javascript:alert(1))", []),
    ("[click](JaVaScRiPt:alert(document.cookie)) after", []),
    ("[x](javascript:alert(1)", []),
    ("javascript:alert(1)", []),
    ("[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)", []),
    ("[x](vbscript:msgbox(1))", []),
    ("[x](//evil.example/path)", []),
    ("[x](ftp://example.com/file)", []),
    # Emphasis, nested and not.
    ("**bold *italic* bold**", []),
    ("***both***", []),
    ("*a **b** a*", []),
    ("_a *b* a_ and __init__ and snake_case_name", []),
    ("**`code` in bold** and `**not bold**`", []),
    # Headings, lists, lines.
    ("# Pricing\nOur plans start at $10 a month.", []),
    ("## Plans\n- Starter\n- Growth\nAsk us anything.", []),
    ("#NoSpace is not a heading", []),
    ("Options:\n1. one\n2. two\n\n3. three", []),
    ("line one\nline two\r\nline three\rline four", []),
    ("", []),
    # HTML is text, never markup.
    ("<script>window.__pwned = 1</script>", []),
    ('<img src=x onerror="window.__pwned = 2">', []),
    ('<a href="javascript:alert(1)">x</a> <b>not bold</b> <!-- comment -->', []),
    ("&lt;b&gt; &amp; &#60;script&#62;", []),
    ("<style>*{display:none}</style>text", []),
    # Unbalanced markers.
    ("**unbalanced", []),
    ("*unbalanced", []),
    ("`unbalanced", []),
    ("_unbalanced", []),
    ("[unbalanced", []),
    ("a ** b * c _ d ` e [ f ] ( g )", []),
    # 4,000-character lines.
    ("x" * 4000, []),
    ("*" * 4000, []),
    ("_" * 4000, []),
    ("`" * 4000, []),
    ("**a" * 1333, []),
    ("*a " * 1333, []),
    ("*a **b" * 800, []),
    ("**a *b" * 800, []),
    ("[" * 2000 + "](" * 1000, []),
    ("[a](" * 1000, []),
    ("https://example.com/" + "a" * 4000, ["https://example.com/" + "a" * 4000]),
    ("https://example.com/" + "(" * 4000, ["https://example.com/"]),
    (f"see {PRICING} " * 100, [PRICING] * 100),
]

RENDER = """(md) => {
  const started = performance.now();
  const div = ServiceWidget._render(md);
  const ms = performance.now() - started;
  const all = Array.from(div.querySelectorAll("*"));
  document.body.appendChild(div);  // innerText: the text as laid out, a line break between blocks
  const text = div.innerText;
  div.remove();
  return {
    ms, text,
    tags: Array.from(new Set(all.map((e) => e.localName))),
    attributes: Array.from(new Set(all.flatMap((e) => Array.from(e.attributes, (a) => a.name)))),
    links: Array.from(div.querySelectorAll("a"),
                      (a) => ({href: a.getAttribute("href"), rel: a.rel, target: a.target})),
  };
}"""
TAGS = {"p", "br", "strong", "em", "code", "a", "ul", "ol", "li"}
ATTRIBUTES = {"href", "target", "rel", "class", "start"}
LINK = re.compile(r"\[([^\]\n]+)\]\((?:[^()\s]|\([^()\s]*\))+\)")
NUMBER = re.compile(r"^\s*\d+[.)]\s+", re.MULTILINE)


def letters(text: str) -> str:
    """Letters and digits in order: what Markdown's markers and line breaks cannot change."""
    return re.sub(r"[\W_]+", "", text)


def shown(markdown: str) -> str:
    """The letters a reader must see: all of them, except link targets and list numbers."""
    return letters(NUMBER.sub("", LINK.sub(r"\1", markdown)))


@pytest.fixture(scope="module")
def page():
    source = WIDGET.read_text()

    def serve(route):
        if route.request.url.endswith("/widget.js"):
            route.fulfill(body=source, content_type="text/javascript")
        else:
            route.fulfill(body=f'<!doctype html><script src="{ORIGIN}/widget.js"></script>',
                          content_type="text/html")

    with browser() as chromium:
        context = chromium.new_context()
        page = context.new_page()
        page.route(f"{ORIGIN}/**", serve)
        page.goto(ORIGIN + "/")
        page.wait_for_function("() => window.ServiceWidget")
        yield page
        context.close()


@pytest.mark.parametrize("markdown, hrefs", CORPUS, ids=[repr(md[:40]) for md, _ in CORPUS])
def test_markdown_renders_safely(page, markdown, hrefs):
    out = page.evaluate(RENDER, markdown)
    assert out["ms"] < 1000, f"rendering took {out['ms']:.0f} ms"
    assert set(out["tags"]) <= TAGS, out["tags"]
    assert set(out["attributes"]) <= ATTRIBUTES, out["attributes"]  # no on*, no style, no src
    assert [link["href"] for link in out["links"]] == hrefs
    for link in out["links"]:
        assert re.match(r"(https?://|mailto:)", link["href"], re.IGNORECASE)
        assert (link["rel"], link["target"]) == ("noopener noreferrer nofollow", "_blank")
    assert letters(out["text"]) == shown(markdown)
    assert page.evaluate("window.__pwned") is None


def test_a_bare_url_is_a_link_showing_the_url(page):
    out = page.evaluate(RENDER, f"Our plans are at {PRICING}.")
    assert out["text"] == f"Our plans are at {PRICING}."
    assert page.evaluate("(md) => ServiceWidget._render(md).querySelector('a').textContent",
                         f"Our plans are at {PRICING}.") == PRICING


def test_a_link_to_another_scheme_is_its_label_as_text(page):
    for markdown, text in [("[click](javascript:alert(1)) after", "click after"),
                           ("[x](vbscript:msgbox(1)).", "x.")]:
        out = page.evaluate(RENDER, markdown)
        assert (out["text"], out["links"]) == (text, [])  # no stray ")"


def test_headings_do_not_swallow_the_text_after_them(page):
    html = page.evaluate("(md) => ServiceWidget._render(md).innerHTML", "# Pricing\nFrom $10.\n- a")
    assert html == '<strong class="h">Pricing</strong><p>From $10.</p><ul><li>a</li></ul>'


def test_a_message_that_fails_to_render_is_plain_text(page):
    # Whatever breaks inside the renderer, the message is still shown, as text.
    text = page.evaluate("""(md) => {
      const create = document.createElement;
      document.createElement = function (tag) {
        if (tag === "strong") throw new Error("broken");
        return create.apply(this, arguments);
      };
      try {
        const div = ServiceWidget._render(md);
        return [div.textContent, div.children.length];
      } finally { document.createElement = create; }
    }""", "**Pricing**: see the page")
    assert text == ["**Pricing**: see the page", 0]
