"""Token and text labels for figures: whitespace made visible, HTML escaped.

Every token label passes through ``token_label``, so "<b>" or a link typed by a user is
shown, never interpreted by plotly; ``plain_label`` escapes labels that are not tokens.
"""

from __future__ import annotations

import functools
import html
import unicodedata
from collections.abc import Sequence

_INVISIBLE = {" ": "␣", "\t": "⇥", "\n": "↵", "\r": "␍"}


@functools.lru_cache(maxsize=8192)
def visible_token(piece: str, *, max_chars: int = 24) -> str:
    """A token's text with whitespace and invisible characters made visible and
    long pieces shortened; for places that show text literally (tables). Cached: a page's labels and a
    cell's words show the same few hundred tokens again at every run."""
    shown = []
    for char in piece:
        if char in _INVISIBLE:
            shown.append(_INVISIBLE[char])
        elif unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn"):
            shown.append(f"⟨U+{ord(char):04X}⟩")
        else:
            shown.append(char)
    text = "".join(shown) or "∅"
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    # Bidirectional text stays in its own run, so a right-to-left token cannot reorder its neighbours.
    if any(unicodedata.bidirectional(c) in ("R", "AL") for c in text):
        text = "\u2068" + text + "\u2069"
    return text


def token_label(piece: str, *, max_chars: int = 24) -> str:
    """A token as a plotly label: ``visible_token`` with HTML special characters
    escaped, so "<b>" or a link typed by a user is shown, never interpreted."""
    return html.escape(visible_token(piece, max_chars=max_chars), quote=False)


def token_labels(pieces: Sequence[str]) -> list[str]:
    return [token_label(p) for p in pieces]


def plain_label(text: str) -> str:
    """Escape a label that is not a token (a dimension name, a series name)."""
    return html.escape(str(text), quote=False)


def plural(word: str) -> str:
    """An axis title from a row or column name: "query" → "queries", "key" → "keys"."""
    if not word.isalpha():  # a symbol such as "d_out" names the axis as it is
        return word
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word if word.endswith("s") else word + "s"
