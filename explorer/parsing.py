"""Reading what a visitor typed or a link sent: whole and decimal numbers, positions and token ranges, parsed
strictly, quoted safely in a notice (``quoted``) and escaped for Markdown (``literal``).

``literal`` is the app's one Markdown escaper: notices, questions and their choices pass user text through it."""

from __future__ import annotations

import math
import re

# What a link or a websocket message may spell a number with: ASCII digits only, and not many.
# ``str.isdigit()`` and ``int()`` accept "²", "٣" and "1_000"; these patterns do not.
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,12}")
DECIMAL_NUMBER = re.compile(r"[+-]?(?:[0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})")
POSITION = re.compile(r"[0-9]{1,6}")
RANGE = re.compile(r"([0-9]{1,6})-([0-9]{1,6})")
CELL = re.compile(r"([0-9]{1,6}),([0-9]{1,6})(?:,([0-9]{1,2}))?")
QUOTE_CHARS = 40  # a notice quotes at most this much of a bad value


def quoted(raw) -> str:
    """A bad value as a notice quotes it: at most ``QUOTE_CHARS`` characters, in quotes.

    It is still text a visitor chose: whatever draws a notice must show it literally (``untrusted.literal``).
    """
    text = str(raw) if isinstance(raw, str | int | float | bool) or raw is None else type(raw).__name__
    return "'" + text[:QUOTE_CHARS] + ("…'" if len(text) > QUOTE_CHARS else "'")


def parse_whole(raw) -> int | None:
    """``raw`` as a whole number, or None: a Python int, an integral float, or ASCII digits with an optional sign."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return int(raw) if raw.is_integer() else None
    if isinstance(raw, str) and WHOLE_NUMBER.fullmatch(raw.strip()):
        return int(raw.strip())
    return None


def parse_decimal(raw) -> float | None:
    """``raw`` as a finite number, or None: a Python number or ASCII digits with an optional point and sign."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str) and DECIMAL_NUMBER.fullmatch(raw.strip()):
        value = float(raw.strip())
    else:
        return None
    return value if math.isfinite(value) else None


def parse_position(raw) -> int | None:
    """A step, query or head number from a link: 1 to 6 ASCII digits, else None."""
    if not isinstance(raw, str) or not POSITION.fullmatch(raw):
        return None
    return int(raw)


def parse_cell(raw) -> tuple[int, int, int] | None:
    """A heatmap cell from a link, "row,col" or "row,col,panel", each counted from 1 as the book counts
    (panel: the step's p-th explainable heatmap, default 1), else None."""
    match = CELL.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if match is None:
        return None
    row, col, panel = int(match[1]), int(match[2]), int(match[3] or 1)
    return (row, col, panel) if min(row, col, panel) >= 1 else None


def parse_range(raw, count: int) -> tuple[int, int] | None:
    """A token window "start-stop" (ASCII digits) clamped to ``count`` tokens, or None."""
    match = RANGE.fullmatch(raw) if isinstance(raw, str) else None
    if match is None:
        return None
    start, stop = sorted(min(int(group), count) for group in match.groups())
    return start, max(stop, start + 1)


# Every ASCII punctuation character, which Markdown lets a backslash make literal.
_MARKDOWN_SPECIAL = frozenset("\\`*_{}[]()<>#+-.!|~:$&\"'=/^%;,?@")


_SCHEME = re.compile(r"(?i)\b(https?|ftps?|mailto|javascript|data|file|xmpp|tel|sms)\\:")
_WWW = re.compile(r"(?i)\b(www)\\\.")


def literal(text: str) -> str:
    """``text`` escaped so that Markdown shows it as it is: no link, image, emphasis or HTML.

    Notices quote what a link or a message sent (``settings.quoted``); Streamlit draws
    ``st.info``'s body as Markdown, so ``[Log in](https://evil.example)`` would be a link and
    ``![x](https://evil.example/p.png)`` a fetched image. A backslash makes every punctuation
    character literal. Bare addresses ("https://…", "www.…", "a@b.c") are linked after parsing,
    from the text itself, so an invisible word joiner (U+2060) goes where one would start: after a
    scheme ("https", "mailto", …) before its ":", after "www" before its ".", and before each "@".
    The text reads the same; numbers ("0.40") and sentences ("Yes: …") are left as they are.
    """
    escaped = "".join("\\" + c if c in _MARKDOWN_SPECIAL else c for c in str(text))
    escaped = _SCHEME.sub("\\1\u2060\\\\:", escaped)
    escaped = _WWW.sub("\\1\u2060\\\\.", escaped)
    return escaped.replace("\\@", "\u2060\\@")
