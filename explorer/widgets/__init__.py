"""The widgets layer: the Streamlit pieces pages are made of, and friendly handling of bad input. This module holds
the small shared pieces: the captions that say where the numbers come from, the stylesheet, the CSV button; the
other modules' names, which use these, are imported at the end. It may import ``room``, ``session``, ``views``,
``models``, ``runtime`` and the bottom modules, never pages."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import streamlit as st

from attention.figures import tables_csv
from explorer.models import describe
from explorer.session import PRESENTER, chosen, current_run, set_settings, this_run
from explorer.settings import DEFAULTS, RANDOM, Settings
from explorer.views import Run
from explorer.views.chapter import BOOK_DROPOUT, TITLES, departures, note_of


@contextlib.contextmanager
def progress(text: str) -> Iterator[Callable[[int, int, str], None]]:
    """A progress bar for a long computation, removed when the block ends; yields ``report(done, total, label)``,
    which redraws it at most four times a second (``total`` 0: ``label`` alone)."""
    bar = st.progress(0.0, text=text)
    shown = [0.0]

    def report(done: int, total: int, label: str) -> None:
        if total == 0:
            bar.progress(0.0, text=label)
        elif time.monotonic() - shown[0] >= 0.25 or done == total:
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
    """A table: an interactive ``st.dataframe``, or in presenter mode an HTML table whose text is at least 18 px (a
    dataframe draws on a canvas at a fixed small size)."""
    if st.session_state.get(PRESENTER):
        (where or st).table(data.style.hide(axis="index") if options.get("hide_index") else data)
    else:
        (where or st).dataframe(data, **options)


def guard(function: Callable, *args, **kwargs):
    """Call ``function``; a ``ValueError`` becomes a friendly warning, never a traceback, and stops the page."""
    try:
        return function(*args, **kwargs)
    except ValueError as error:
        st.warning(str(error), icon=":material/edit_note:")
        st.stop()


# Captions that say where the numbers come from: the trained layer behind them, whether they are the
# book's (naming the section), and the Dropout page's line with its button back to the book's dropout.


def weights_caption(settings: Settings) -> None:
    """``describe`` as a caption under the page's title, when a model's weights are on."""
    if settings.weights != RANDOM and (text := describe(settings)):
        st.caption(":material/model_training: " + text)


def page(title: str) -> Run:
    """A chapter page's start: its title, the trained layer behind its numbers (``weights_caption``), its ``Run``."""
    run = current_run()
    st.title(title)
    weights_caption(run.settings)
    return run


def outside_model() -> Run:
    """The run for a page the model's weights do not reach (Why attention's RNN): random weights, saying why."""
    run = current_run()
    if run.settings.weights == RANDOM:
        return run
    st.caption(
        ":material/model_training: The Weight matrices setting picks a GPT's, and they do not reach this page. "
        "Its RNN encoder–decoder has its own parameters: seeded, and in the two Trained steps trained to reverse "
        "sentences."
    )
    return Run.of(replace(chosen(), weights=RANDOM))


def even_note(text: str, *, where=None) -> None:
    """The note that a step's weights are near-uniform (``page_text.even_weights``), in ``where``; none if empty."""
    if text:
        (where or st).info(text, icon=":material/balance:")


def book_caption(settings: Settings, section: str, *, also: Sequence[str] = (), where=None) -> None:
    """Show ``note`` as a caption (in ``where``, a container, or the page) and record it for the export."""
    (where or st).caption(":material/menu_book: " + note_of(settings, section, tuple(also)))
    book = not departures(settings, section) and not also
    this_run().sections.append({"section": TITLES[section], "book": book})


def dropout_setting(settings: Settings, used: Settings, active: bool) -> None:
    """The Dropout page's line saying whose dropout it uses, and a button back to the book's."""
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


# Presenter mode: every text in the main area at least 18 px (code 16 px), less chrome. 1.125rem is 18 px. Of
# Streamlit's header only the button that opens the sidebar stays: the presenter's room is there.
PRESENTER_CSS = """
<style>
[data-testid="stDecoration"], [data-testid="stHeader"] :is([data-testid="stToolbarActions"],
  [data-testid="stMainMenu"], [data-testid="stStatusWidget"], [data-testid="stAppDeployButton"]) {display: none;}
[data-testid="stMainBlockContainer"] {padding-top: 0.6rem; padding-bottom: 0.5rem; max-width: 100%;}
@media (max-width: 640px) {  /* a phone's page starts under that button, at its left edge */
  [data-testid="stMainBlockContainer"] {padding-top: 3rem;}
}
[data-testid="stMainBlockContainer"] h1 {font-size: 1.75rem; padding: 0 0 0.1rem 0;}
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] :is(p, li, div) {
  font-size: 1.2rem; line-height: 1.35;
}
[data-testid="stMainBlockContainer"] :is([data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] *,
  [data-testid="stWidgetLabel"] *, [data-testid="stExpander"] summary *, [data-testid="stMetricLabel"] *,
  [data-testid="stTable"] *, [data-testid="stAlertContentInfo"] *, [data-testid="stAlertContentWarning"] *,
  [data-baseweb="select"] *, [data-baseweb="tab"] *, [data-testid="stRadio"] *, [data-testid="stSlider"] *,
  [data-testid="stButtonGroup"] *, button, button *, input, label, label *) {font-size: 1.125rem;}
[data-testid="stMainBlockContainer"] :is(button p, [data-testid="stExpander"] summary p) {font-size: 1.2rem;}
[data-testid="stMainBlockContainer"] [data-testid="stMetricValue"] * {font-size: 1.6rem;}
[data-testid="stMainBlockContainer"] :is([data-testid="stCode"] *, code, code *) {font-size: 1rem;}
[data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] p code {font-size: 1.1rem;}
[data-testid="stMainBlockContainer"] :is(h2, h3) code {font-size: 1.4rem;}
[data-testid="stMainBlockContainer"] .katex {font-size: 1.35em;}
[data-testid="stMainBlockContainer"] [data-testid="stTable"] td,
[data-testid="stMainBlockContainer"] [data-testid="stTable"] th {padding: 0.15rem 0.5rem;}
/* a cell's sum (widgets.charts) is the panel's point: as large as its words */
.st-key-cell_panel [data-testid="stCode"] * {font-size: 1.125rem;}
/* a predict-then-reveal question reads from the back of the room */
[class*="st-key-predict_"] [data-testid="stMarkdownContainer"] p {font-size: 1.6rem; line-height: 1.4;}
</style>
"""
SCROLL_WIDTHS = (480, 560, 640, 720, 800, 960, 1120, 1280, 1600, 2000)  # a chart scrolled on a phone is one of these
# The main area starts close under Streamlit's header, so the header must neither paint over it (it hid the
# query picker's label) nor take its clicks: its full-width toolbar lay over the top of the room's "On my own".
# A grid of more than six heads (``every_head_wide``) has no room for its labels on a phone; its hover keeps them.
BASE_CSS = """<style>
[data-testid="stMainBlockContainer"] {padding-top: 2.2rem; padding-bottom: 1rem;}
[data-testid="stHeader"] {background: transparent;}
[data-testid="stHeader"], [data-testid="stHeader"] * {pointer-events: none;}
[data-testid="stHeader"] :is(button, a) {pointer-events: auto;}
/* a diff's removed and added lines at WCAG AA contrast on the code block's gray (Streamlit's red is 3.2 : 1) */
[data-testid="stCode"] .deleted {color: #b42318 !important;}
[data-testid="stCode"] .inserted {color: #116329 !important;}
/* a chosen or hovered segment of a segmented control: Streamlit's blue on its tint is 4.1 : 1, this 5.9 : 1 */
[data-testid="stButtonGroup"] button:is(:hover, [data-selected], [aria-checked="true"], [aria-pressed="true"])
  :is(p, span) {color: #005a8c;}
/* the stepper's clicker buttons (widgets.steps): display: none takes them out of the layout, the tab order and the
   accessibility tree, so screen readers do not read them; their keyboard shortcuts still work */
[class*="st-key-clicker_"] {display: none;}
@media (max-width: 640px) {  /* a phone: the grid of every layer and head keeps its labels inside each chart */
  [class*="st-key-every_head"] .textpoint text {font-size: 9px !important;}
  [class*="st-key-every_head_wide"] .textpoint {display: none;}
  /* and every text is at least 16 px (Streamlit draws labels, buttons and captions at 14), code 14 */
  [data-testid="stMainBlockContainer"] :is([data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] *,
    [data-testid="stWidgetLabel"] *, [data-testid="stExpander"] summary *, [data-baseweb="select"] *,
    [data-testid="stRadio"] *, [data-testid="stButtonGroup"] *, [data-testid="stAlertContainer"] *,
    [data-testid="stSlider"] *, [data-testid="stTable"] *, [data-testid="stPageLink"] *, button, button *, input,
    label, label *) {font-size: 1rem;}
  [data-testid="stMainBlockContainer"] [data-testid="stMarkdownContainer"] code {font-size: 0.875rem;}
  /* a chart whose cell texts need more room keeps it and scrolls sideways inside itself (widgets.charts) */
  [class*="st-key-scroll"] {overflow-x: auto; overscroll-behavior-x: contain;}
  /* what a student taps in a live room, at least 44 × 44 px: the question's answer and buttons, the room's bar */
  [class*="st-key-predict_"] :is(button, [data-baseweb="input"], label[data-baseweb="radio"]),
    :is(.st-key-room_alone, .st-key-room_follow, .st-key-room_pace) button {min-height: 44px; min-width: 44px;}
  /* plotly's toolbar would cover a narrow chart's title: a phone has the CSV download under each chart */
  [data-testid="stMain"] .js-plotly-plot .modebar-container {display: none;}
  [class*="st-key-scroll"]::before {content: "Swipe sideways to see the whole chart ↔"; font-size: 1rem;
    color: #555; position: sticky; left: 0;}
"""
BASE_CSS += "".join(
    f'  [class*="st-key-scroll{w}_"] > div:has([data-testid="stPlotlyChart"]) {{min-width: {w}px;}}\n'
    for w in SCROLL_WIDTHS
)
BASE_CSS += "}\n</style>"


def stylesheet(*, presenter: bool) -> None:
    """The app's one stylesheet: a step fits a 1280×720 screen; presenter mode adds larger text, less chrome."""
    st.html(BASE_CSS + (PRESENTER_CSS if presenter else ""))


# A page's own rules in presenter mode, by the page's url path: Break it's diff, tables and choice are its
# whole content, so they are drawn larger than other pages' tables.
PAGE_PRESENTER_CSS = {
    "mistakes": """<style>
:is([data-testid="stTable"] :is(td, th), .st-key-w_mistake *, [data-testid="stMain"] :is(li, pre code)) {
  font-size: 1.25rem;
}
</style>""",
}


def page_stylesheet(page: str) -> None:
    """``page``'s own presenter rules (``PAGE_PRESENTER_CSS``), in presenter mode only."""
    if st.session_state.get(PRESENTER) and page in PAGE_PRESENTER_CSS:
        st.html(PAGE_PRESENTER_CSS[page])


# A chart that scrolls sideways on a phone (``widgets.charts.phone_scroll``) is a region a keyboard can focus
# and scroll with the arrow keys, named for screen readers; Streamlit's containers take no attributes.
SCROLL_REGIONS = """<script>
if (!window.chartScrollRegions) {
  window.chartScrollRegions = true;
  const mark = () => document.querySelectorAll('[class*="st-key-scroll"]:not([tabindex])').forEach((el) => {
    el.tabIndex = 0;
    el.setAttribute('role', 'region');
    el.setAttribute('aria-label', 'Chart: scroll sideways to see all of it');
  });
  new MutationObserver(mark).observe(document.body, {childList: true, subtree: true});
  mark();
}
</script>"""


# What a learner takes away from a step: each heatmap's numbers as CSV and the whole step's numbers as JSON,
# named for the page, the step and the quantity. A masked weight is 0, a masked score -inf ("-inf" in JSON), and
# a token that looks like a spreadsheet formula is shown, never run. ``figures.tables_csv`` makes the text only when
# a button is pressed.


IMAGE_FORMAT = "w_image_format"
NO_STEP = ("", 0, "")  # ``this_run().step`` on a page without steps


def export_name(quantity: str) -> str:
    """A file name stem that says the page, the step and the quantity: "causal_mask-step3-masked_weights"."""
    page, index = (this_run().step or NO_STEP)[:2]
    return "-".join(filter(None, (page, f"step{index + 1}" if page else "", quantity.replace("-", "_"))))


def csv_download(tables, file_name: str, *, key: str) -> None:
    """A figure's CSV button: its matrix with token labels, for a heatmap; nothing for any other figure."""
    if not any(t["type"] == "heatmap" for t in tables):
        return
    st.download_button(
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


# The other modules, after the pieces above, which they import from here.
from explorer.runtime.patches import run_page  # noqa: E402
from explorer.widgets.charts import Panel, chart, draw, explain_cell, panel, side_by_side, style, token_vectors  # noqa: E402
from explorer.widgets.models import show_alignment, show_bottleneck, show_every_head, show_summaries  # noqa: E402
from explorer.widgets.questions import ask  # noqa: E402
from explorer.widgets.sidebar import sidebar  # noqa: E402
from explorer.widgets.steps import Steps, finish_run, show_code  # noqa: E402

__all__ = [
    "Panel",
    "Steps",
    "ask",
    "book_caption",
    "chart",
    "draw",
    "dropout_setting",
    "even_note",
    "explain_cell",
    "finish_run",
    "guard",
    "outside_model",
    "page",
    "page_stylesheet",
    "panel",
    "progress",
    "run_page",
    "show_alignment",
    "show_bottleneck",
    "show_code",
    "show_every_head",
    "show_summaries",
    "side_by_side",
    "sidebar",
    "style",
    "stylesheet",
    "table",
    "token_vectors",
    "truncation_notice",
    "weights_caption",
]
