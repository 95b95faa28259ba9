"""How readable the widget's text is on its main colour: the contrast ratio of WCAG 2.x.

The widget (static/widget/widget.js) writes the tenant's text colour on the main colour (the
launcher, the header, the visitor's messages, the send button); the dashboard warns when that
pair is below WCAG's 4.5:1 for text (success criterion 1.4.3, level AA).
"""

from __future__ import annotations

import math

MIN_TEXT_CONTRAST = 4.5


def _channel(value: int) -> float:
    """One sRGB channel (0-255) made linear, as WCAG's relative luminance defines it."""
    c = value / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def relative_luminance(colour: str) -> float:
    """The relative luminance (0 black to 1 white) of a ``#rrggbb`` colour."""
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * _channel(red) + 0.7152 * _channel(green) + 0.0722 * _channel(blue)


def contrast_ratio(first: str, second: str) -> float:
    """(L1 + 0.05) / (L2 + 0.05) of two ``#rrggbb`` colours, the lighter's luminance on top:
    1 for the same colour, 21 for black on white."""
    light, dark = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def shown_ratio(ratio: float) -> str:
    """The ratio as people read it, ``4.49:1``: rounded down, so that a pair under the minimum
    never reads as reaching it."""
    return f"{math.floor(ratio * 100) / 100:.2f}:1"
