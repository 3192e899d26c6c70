"""Small pieces every page shares: bad input explained without a traceback, a progress bar, a truncation
notice, and tables that stay readable in presenter mode.

Then the captions that say where the numbers come from (``book_caption``, ``weights_caption``,
``outside_model``, ``dropout_setting``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import streamlit as st

from explorer.models import describe
from explorer.session.keys import PRESENTER, RUN_SECTIONS
from explorer.session.state import chosen, current_run, set_settings
from explorer.settings import DEFAULTS, RANDOM, Settings
from explorer.views.book import BOOK_DROPOUT, TITLES, departures, note_of
from explorer.views.run import Run


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


# Captions that say where the numbers come from: the trained layer behind them, whether they are the
# book's (naming the section), and the Dropout page's line with its button back to the book's dropout.


def weights_caption(settings: Settings) -> None:
    """``describe`` as a caption under the page's title, when a model's weights are on."""
    if settings.weights == RANDOM:
        return
    text = describe(settings)
    if text:
        st.caption(":material/model_training: " + text)


def outside_model() -> Run:
    """The run for a page the model's weights do not reach (Why attention's RNN encoder–decoder): the sidebar's
    own settings, with random weights; with a model's weights on, a caption says why they are not used here."""
    run = current_run()
    if run.settings.weights == RANDOM:
        return run
    st.caption(
        ":material/model_training: The Weight matrices setting picks a GPT's, and they do not reach this page. "
        "Its RNN encoder–decoder has its own parameters: seeded, and in the two Trained steps trained to reverse "
        "sentences."
    )
    return Run.of(replace(chosen(), weights=RANDOM))


def book_caption(settings: Settings, section: str, *, also: Sequence[str] = (), where=None) -> None:
    """Show ``note`` as a caption (in ``where``, a container, or the page) and record it for the export."""
    (where or st).caption(":material/menu_book: " + note_of(settings, section, tuple(also)))
    book = not departures(settings, section) and not also
    st.session_state.setdefault(RUN_SECTIONS, []).append({"section": TITLES[section], "book": book})


def shown() -> list[dict]:
    """The sections this run's captions named, each with whether its numbers are the book's."""
    return list(st.session_state.get(RUN_SECTIONS, []))


def dropout_setting(settings: Settings, used: Settings, active: bool) -> None:
    """The Dropout page's line saying whose dropout it uses (the book's or the sidebar's), and a button that
    turns the sidebar's dropout off again, so that the page returns to the book's."""
    book = used is not settings
    mode, action = st.columns([3, 2], vertical_alignment="center")
    mode.markdown(
        ("The book's setting" if book else "Sidebar")
        + f": **{'training' if used.training else 'eval'} mode** · dropout p = **{used.dropout:.2f}** · "
        f"seed **{settings.seed}**"
        + ("" if active else " · nothing is dropped")
        + (" (the sidebar's dropout is off; change its p or mode to try your own)" if book else "")
    )
    action.button(
        f"Back to the book's p = {BOOK_DROPOUT} in training mode",
        on_click=set_settings,
        kwargs={"dropout": DEFAULTS.dropout, "training": DEFAULTS.training},
        disabled=book,
        key="book_dropout",
        help="Turns the sidebar's dropout off again (p = 0, eval mode), as on the other pages and in every output "
        "the book prints except section 3.5.2's. "
        f"This page then uses the book's p = {BOOK_DROPOUT} in training mode.",
        width="stretch",
    )
