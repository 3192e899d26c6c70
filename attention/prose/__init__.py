"""The words the app and ``notebook.explore`` share, beside the math: ``cells`` (what a heatmap's cells are: each
cell's derivation written in the book's notation) and ``glossary`` (every term a learner meets, and ``term`` to
link one). Here, what every such sentence passes through: ``literal``, the one Markdown escaper, and
``sentence_start``."""

from __future__ import annotations

import re
import string

_SCHEME = re.compile(r"(?i)\b(https?|ftps?|mailto|javascript|data|file|xmpp|tel|sms)\\:")
_WWW = re.compile(r"(?i)\b(www)\\\.")


def literal(text: str) -> str:
    """``text`` escaped so that Markdown shows it as it is: no link, image, emphasis or HTML. A backslash makes
    punctuation literal; a word joiner (U+2060) breaks a bare address where the autolinker would find one
    (after a scheme or "www", before "@"). The text reads the same."""
    escaped = "".join("\\" + c if c in string.punctuation else c for c in str(text))  # all ASCII punctuation
    escaped = _SCHEME.sub("\\1\u2060\\\\:", escaped)
    escaped = _WWW.sub("\\1\u2060\\\\.", escaped)
    return escaped.replace("\\@", "\u2060\\@")


def sentence_start(name: str) -> str:
    """A model's name where it begins a sentence: "The small GPT …", "GPT-2"."""
    return name[:1].upper() + name[1:]
