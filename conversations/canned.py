"""The placeholders of canned replies (docs/dashboard.md, "Inbox"): what each is filled with,
from the conversation's lead, the tenant and the person replying.

- ``{first_name}``: the first word of the lead's name, else of the name the visitor gave;
- ``{meeting_link}``: the tenant's booking link (Settings), else the page of the lead's next
  scheduled meeting;
- ``{agent_name}``: the first name of the person replying, else their name.

A placeholder without a value stays as written, so that the person sees it in the reply box and
writes what it should say; the reply is theirs to send.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PLACEHOLDERS = ("first_name", "meeting_link", "agent_name")
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def unknown_placeholders(text: str) -> list[str]:
    """The ``{words}`` of ``text`` that are no placeholder, in order, once each."""
    found = [name for name in PLACEHOLDER.findall(text) if name not in PLACEHOLDERS]
    return list(dict.fromkeys(found))


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each placeholder that has a value replaced by it."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1)) or m.group(0), text)


def first_word(name: str | None) -> str:
    return (name or "").strip().split(" ")[0] if (name or "").strip() else ""
