"""What a learner takes away from a step: each heatmap's numbers as CSV and the whole step's
numbers as JSON, in files named for the page, the step and the quantity.

Exports mean what they say: a masked weight is 0, a masked score -inf (the string "-inf" in
JSON), and a token that looks like a spreadsheet formula is shown, never run.

The buttons live here; the text they hold is made by ``figures.tables``, only when a button is pressed."""

from __future__ import annotations

import streamlit as st

from explorer.figures.tables import JSON_NOTE, json_table, step_json, tables_csv
from explorer.views.book import is_book
from explorer.views.run import Run
from explorer.widgets.captions import RUN_KEY
from explorer.widgets.cells import CELL_CODE, RUN_CELLS

RUN_FIGURES = "run_figures"  # the figures drawn in this run, for the step's JSON export
IMAGE_FORMAT = "w_image_format"


def begin_run() -> None:
    """Forget the previous run's figures (the entry script calls this before the page)."""
    st.session_state[RUN_FIGURES] = []
    st.session_state.pop("run_step", None)
    st.session_state.pop("run_book_sections", None)  # RUN_KEY: the book sections captioned
    st.session_state.pop(RUN_CELLS, None)  # the explainable panels drawn
    st.session_state.pop(CELL_CODE, None)  # the code line that made the selected cell


def export_name(quantity: str) -> str:
    """A file name stem that says the page, the step and the quantity: "causal_mask-step3-masked_weights"."""
    page, index, _ = st.session_state.get("run_step", ("", 0, ""))
    parts = [page, f"step{index + 1}" if page else "", quantity.replace("-", "_")]
    return "-".join(p for p in parts if p)


def figure_downloads(tables, title: str, name: str, file_name: str, *, key: str) -> None:
    """Add a drawn figure's numbers (``figure_tables``) to this step's JSON export and, for heatmaps,
    offer them as CSV."""
    st.session_state.setdefault(RUN_FIGURES, []).append({"name": name, "title": title or name, "tables": tables})
    if any(t["type"] == "heatmap" for t in tables):
        st.download_button(
            "CSV",
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


def tokenizer_name(run: Run) -> str:
    """The tokenizer that made this view's tokens (the book's preset uses none: six fixed vectors)."""
    return "none (the input could not be tokenized)" if run.prepared is None else run.prepared.tokenizer


def step_exports(page_title: str, run: Run) -> None:
    """A "download this step's numbers" JSON button for everything drawn in this run."""
    drawn = st.session_state.get(RUN_FIGURES, [])
    if not drawn:
        return
    step = st.session_state.get("run_step", (page_title, 0, ""))
    sections = list(st.session_state.get(RUN_KEY, []))  # the book sections this run's captions named
    st.download_button(
        "Download this step's numbers (JSON)",
        data=lambda: step_json(step_payload(page_title, step, run, sections, drawn)),
        file_name=f"{export_name('numbers')}.json",
        mime="application/json",
        on_click="ignore",
        icon=":material/data_object:",
        key="step_json",
    )


def step_payload(page_title: str, step: tuple, run: Run, sections: list[dict], drawn: list[dict]) -> dict:
    """What the step's JSON holds: the page and step, the settings, the tokenizer, whether the numbers are the
    book's, and every figure's numbers. Made only when the button is pressed."""
    settings = run.settings
    return {
        "page": page_title,
        "step": step[1] + 1,
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
