"""One-line text: the names, companies and titles that end up in an email's headers, an
``.ics`` and the dashboard's lists, where a line break or another control character either
breaks the message (Django refuses a header with CR or LF, for good) or forges a line of it.

Control characters here are Unicode's ``Cc`` (C0, DEL, C1: tab, LF, CR, NEL, ...) and the line
and paragraph separators U+2028 and U+2029, which Python's ``str.splitlines`` also breaks at.
Input refuses them (``has_control``); text that came in before that rule, or from a visitor
through the chat agent, is made one line (``one_line``) where it is used.
"""

from __future__ import annotations

import re

# As an ECMAScript and a Python character class read alike (the OpenAPI patterns use it).
CONTROL_CLASS = r"\u0000-\u001f\u007f-\u009f\u2028\u2029"
_CONTROL = re.compile(f"[{CONTROL_CLASS}]")
# A run of control characters with the whitespace around it.
_BREAK = re.compile(rf"\s*[{CONTROL_CLASS}][{CONTROL_CLASS}\s]*")

CONTROL_MESSAGE = "Line breaks, tabs and other control characters are not allowed."


def has_control(text: str) -> bool:
    """Whether ``text`` holds a control character anywhere."""
    return _CONTROL.search(text) is not None


def one_line(text: str) -> str:
    """``text`` with each run of control characters, and the whitespace around it, made one
    space, and the ends trimmed: "Sam \\r\\n Lee" is "Sam Lee"."""
    if not has_control(text):
        return text
    return _BREAK.sub(" ", text).strip()
