"""Small pieces every page shares: bad input explained without a traceback, a progress bar, a truncation
notice, and tables that stay readable in presenter mode."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import streamlit as st

from explorer.session.keys import PRESENTER


@contextlib.contextmanager
def progress(text: str, *, every_s: float = 0.25) -> Iterator[Callable[[int, int, str], None]]:
    """A progress bar for a long computation; yields ``report(done, total, label)`` to move it.

    The bar moves a few times a second at most, so redrawing it does not slow what it
    measures; ``total`` 0 shows ``label`` alone. The bar is removed when the block ends.
    """
    bar = st.progress(0.0, text=text)
    shown = [0.0]

    def report(done: int, total: int, label: str) -> None:
        if total == 0:
            bar.progress(0.0, text=label)
        elif time.monotonic() - shown[0] >= every_s or done == total:
            shown[0] = time.monotonic()
            bar.progress(done / total, text=f"{label} ({done}/{total})")

    try:
        yield report
    finally:
        bar.empty()


def truncation_notice(truncated_from: int | None, context_length: int, *, subject: str = "The text") -> None:
    """Say that only the first ``context_length`` tokens are used, when the input had more."""
    if truncated_from:
        st.info(
            f"{subject} has {truncated_from:,} tokens; only the first {context_length:,} (context_length) are used.",
            icon=":material/content_cut:",
        )


def table(data, *, where=None, **options) -> None:
    """A table: an interactive ``st.dataframe``, or in presenter mode an HTML table whose text is at least
    18 px (a dataframe draws on a canvas at a fixed small size). ``options`` go to ``st.dataframe``."""
    where = where or st
    if not st.session_state.get(PRESENTER):
        where.dataframe(data, **options)
        return
    where.table(data.style.hide(axis="index") if options.get("hide_index") else data)


def show_error(error: ValueError) -> None:
    """A bad input explained, never a traceback."""
    st.warning(str(error), icon=":material/edit_note:")


def guard(function: Callable, *args, **kwargs):
    """Call ``function``; a ``ValueError`` becomes a friendly warning and stops the page."""
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        show_error(error)
        st.stop()
