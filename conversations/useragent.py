"""What a visitor's ``User-Agent`` says of their device, system and browser, for the visitor
panel of the dashboard (docs/dashboard.md, "Inbox"). A few rules for the browsers people use,
in the order that tells them apart (Edge and Opera also say "Chrome", Chrome also says
"Safari"); anything else is named by its first product token ("python-httpx 0.27")."""

from __future__ import annotations

import re
from dataclasses import dataclass

# (name, pattern whose group 1 is the version), first match wins.
BROWSERS = (
    ("Edge", r"Edg(?:e|A|iOS)?/(\d+)"),
    ("Opera", r"(?:OPR|Opera)/(\d+)"),
    ("Samsung Internet", r"SamsungBrowser/(\d+)"),
    ("Firefox", r"(?:Firefox|FxiOS)/(\d+)"),
    ("Chrome", r"(?:HeadlessChrome|Chrome|CriOS)/(\d+)"),
    ("Safari", r"Version/(\d+)[.\d]* (?:Mobile/\S+ )?Safari/"),
)
SYSTEMS = (
    ("iPadOS", r"iPad"),
    ("iOS", r"iPhone|iPod"),
    ("Android", r"Android"),
    ("ChromeOS", r"CrOS"),
    ("Windows", r"Windows"),
    ("macOS", r"Mac OS X|Macintosh"),
    ("Linux", r"Linux|X11"),
)
BOT = re.compile(r"bot\b|crawler|spider|slurp|HeadlessChrome", re.IGNORECASE)
PRODUCT = re.compile(r"([A-Za-z][\w.-]*)/([\w.]+)")
GENERIC = frozenset({"Mozilla", "AppleWebKit", "KHTML", "Gecko"})


@dataclass(frozen=True)
class Agent:
    device: str  # Phone, Tablet, Desktop, Bot, or "" when nothing was said
    system: str
    browser: str  # with its major version: "Chrome 126"


def parse(user_agent: str | None) -> Agent:
    text = (user_agent or "").strip()[:500]
    if not text:
        return Agent("", "", "")
    system = next((name for name, pattern in SYSTEMS if re.search(pattern, text)), "")
    browser = ""
    for name, pattern in BROWSERS:
        match = re.search(pattern, text)
        if match:
            browser = f"{name} {match.group(1)}"
            break
    if not browser and not system:
        # A crawler or a program: its own product token ("Googlebot/2.1", "python-httpx/0.27").
        named = [m for m in PRODUCT.finditer(text) if m.group(1) not in GENERIC]
        browser = f"{named[0].group(1)} {named[0].group(2)}" if named else text.split(" ")[0][:40]
    if BOT.search(text):
        device = "Bot"
    elif system == "iPadOS" or (system == "Android" and "Mobile" not in text) or "Tablet" in text:
        device = "Tablet"
    elif system in ("iOS", "Android") or "Mobile" in text:
        device = "Phone"
    elif system:
        device = "Desktop"
    else:
        device = ""
    return Agent(device, system, browser)
