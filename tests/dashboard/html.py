"""Reading the dashboard's pages as a person does: what is written beside a field, what it holds."""

from __future__ import annotations

import lxml.html


def page(content: bytes | str):
    return lxml.html.fromstring(content)


def beside(content: bytes | str, input_id: str) -> str:
    """The text of the field block (``div.field`` or ``fieldset.field``) that holds the input
    ``input_id``: its label, help and errors."""
    blocks = page(content).xpath(
        f"//*[contains(concat(' ', @class, ' '), ' field ')][.//*[@id='{input_id}']]")
    assert blocks, f"no field holds #{input_id}"
    return " ".join(blocks[-1].text_content().split())


def errors_beside(content: bytes | str, input_id: str) -> list[str]:
    """The errors listed in the field block of ``input_id``."""
    blocks = page(content).xpath(
        f"//*[contains(concat(' ', @class, ' '), ' field ')][.//*[@id='{input_id}']]")
    assert blocks, f"no field holds #{input_id}"
    return [" ".join(li.text_content().split()) for li in blocks[-1].xpath(".//ul[@class='errorlist']/li")]


def value_of(content: bytes | str, input_id: str) -> str | None:
    """What the input (or textarea) ``input_id`` holds as the page is served."""
    (element,) = page(content).xpath(f"//*[@id='{input_id}']")
    if element.tag == "textarea":
        return element.text or ""
    return element.get("value")


def checked(content: bytes | str, name: str) -> list[str]:
    """The values of the checked boxes named ``name``."""
    return [box.get("value") for box in page(content).xpath(f"//input[@name='{name}'][@checked]")]
