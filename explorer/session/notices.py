"""A notice that may quote what a visitor sent, drawn with every Markdown character escaped."""

from __future__ import annotations

import streamlit as st

from explorer.parsing import literal


def notice(text: str, *, where=None) -> None:
    """A notice that may quote user input, drawn literally (``literal``)."""
    (where or st).info(literal(text), icon=":material/info:")
