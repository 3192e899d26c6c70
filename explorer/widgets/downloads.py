"""What a learner takes away from a step: each heatmap's numbers as CSV and the whole step's
numbers as JSON, in files named for the page, the step and the quantity.

Exports mean what they say: a masked weight is 0, a masked score -inf (the string "-inf" in
JSON), and a token that looks like a spreadsheet formula is shown, never run.

The buttons live here; the text they hold is made by ``figures.tables``, only when a button is pressed."""

from __future__ import annotations

import functools
from collections.abc import Callable

import streamlit as st

from explorer.figures.tables import JSON_NOTE, json_table, step_json, tables_csv
from explorer.session import (
    LINK_SLOT,
    PAGE_PARAMS,
    PRESENTER,
    RUN_FIGURES,
    RUN_SECTIONS,
    RUN_STEP,
    SETTINGS,
    chosen,
    view_link,
)
from explorer.settings import MAX_URL_TEXT_CHARS, TEXT
from explorer.views.chapter import is_book
from explorer.views.run import Run

IMAGE_FORMAT = "w_image_format"


NO_STEP = ("", 0, "")  # RUN_STEP on a page without steps


def export_name(quantity: str) -> str:
    """A file name stem that says the page, the step and the quantity: "causal_mask-step3-masked_weights"."""
    return file_stem(st.session_state.get(RUN_STEP, NO_STEP), quantity)


@functools.lru_cache(maxsize=512)
def file_stem(step: tuple, quantity: str) -> str:
    """``export_name`` for the step ``(page, index, title, slug)``."""
    page, index = step[0], step[1]
    parts = [page, f"step{index + 1}" if page else "", quantity.replace("-", "_")]
    return "-".join(p for p in parts if p)


def csv_download(tables, file_name: str, *, key: str) -> dict | None:
    """The arguments of a figure's CSV button (``st.download_button``): its matrix with token labels, for a
    heatmap; None for any other figure."""
    if not any(t["type"] == "heatmap" for t in tables):
        return None
    return dict(
        label="CSV",
        data=lambda: tables_csv(tables),
        file_name=f"{file_name}.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
        type="tertiary",
        key=key,
        help="This figure's matrix, with token labels in the header and the first column. "
        "Masked weights are 0, masked scores -inf.",
    )


def figure_downloads(tables, title: str, name: str, file_name: str, *, key: str) -> None:
    """Add a drawn figure's numbers (``figure_tables``) to this step's JSON export and, for heatmaps,
    offer them as CSV."""
    st.session_state.setdefault(RUN_FIGURES, []).append({"name": name, "title": title or name, "tables": tables})
    download = csv_download(tables, file_name, key=key)
    if download is not None:
        st.download_button(**download)


def tokenizer_name(run: Run) -> str:
    """The tokenizer that made this view's tokens (the book's preset uses none: six fixed vectors)."""
    return "none (the input could not be tokenized)" if run.prepared is None else run.prepared.tokenizer


def finish_run(
    page_title: str, run: Run, url_path: str, address: Callable[[dict[str, str]], dict[str, str]] = dict
) -> dict[str, str]:
    """After the page: a "download this step's numbers" JSON button for everything drawn in this run, then the
    view written into the URL (the address bar is a deep link) and offered as "Copy link to this view" in the
    sidebar slot ``widgets.sidebar`` reserved. ``address`` makes the address bar's parameters from the view's
    (a student in a live room keeps the room there). Returns the view's parameters."""
    state = st.session_state
    drawn, step = state.get(RUN_FIGURES, []), state.get(RUN_STEP)
    if drawn:
        sections = list(state.get(RUN_SECTIONS, []))  # the book sections this run's captions named
        shown = step or (page_title, 0, "")
        st.download_button(
            "Download this step's numbers (JSON)",
            data=lambda: step_json(step_payload(page_title, shown, run, sections, drawn)),
            file_name=f"{file_stem(step or NO_STEP, 'numbers')}.json",
            mime="application/json",
            on_click="ignore",
            icon=":material/data_object:",
            key="step_json",
        )
    settings = state.get(SETTINGS) or chosen()  # ``chosen``, not entered at each run
    page_params = tuple(state.pop(PAGE_PARAMS, {}).items())
    params, link = view_link(settings, step, page_params, bool(state.get(PRESENTER)), st.context.url, url_path)
    shown = address(params)
    if st.query_params.to_dict() != shown:
        st.query_params.from_dict(shown)
    with (state.get(LINK_SLOT) or st.sidebar).popover(
        "Copy link to this view", icon=":material/link:", width="stretch"
    ):
        st.caption("Opens this page, step and settings with the same numbers. Click the copy icon.")
        st.code(link, language=None, wrap_lines=True)
        if settings.source == TEXT and len(settings.text) > MAX_URL_TEXT_CHARS:
            st.warning(f"Sentences over {MAX_URL_TEXT_CHARS:,} characters are not put in links.")
    return params


def step_payload(page_title: str, step: tuple, run: Run, sections: list[dict], drawn: list[dict]) -> dict:
    """What the step's JSON holds: the page and step, the settings, the tokenizer, whether the numbers are the
    book's, and every figure's numbers. Made only when the button is pressed."""
    settings = run.settings
    return {
        "page": page_title,
        "step": step[1] + 1,
        "step_name": step[3] if len(step) > 3 else str(step[1] + 1),
        "step_title": step[2],
        "settings": {k: v for k, v in vars(settings).items() if k != "text" or settings.source == "text"},
        "tokenizer": tokenizer_name(run),
        "book_values": is_book(settings),
        "book_sections": sections,
        "note": JSON_NOTE,
        "figures": [
            {"name": d["name"], "title": d["title"], "traces": [json_table(t) for t in d["tables"]]} for d in drawn
        ],
    }
