"""The app's one stylesheet: a little less space above the title everywhere, and in presenter mode every
text in the main area at least 18 px (code 16 px), questions larger still, and less chrome."""

from __future__ import annotations

import streamlit as st

from explorer.session.keys import PRESENTER

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
/* a cell's sum (widgets.cells) is the panel's point: as large as its words */
.st-key-cell_panel [data-testid="stCode"] * {font-size: 1.125rem;}
/* a predict-then-reveal question reads from the back of the room */
[class*="st-key-predict_"] [data-testid="stMarkdownContainer"] p {font-size: 1.6rem; line-height: 1.4;}
</style>
"""
# The main area starts close under Streamlit's header, so the header must neither paint over it (it hid the
# query picker's label) nor take its clicks: its toolbar spans the full width, and a 200 px box in its right
# corner lay over the top of the room's "On my own". Only the header's own buttons take clicks. On a phone the
# labels of the grid of every layer and head (``figures.charts``) shrink to fit its narrow small multiples; a
# grid of more than six heads (``every_head_wide``) has no room for them at all, and its hover keeps them. A
# diff's colours are darker than Streamlit's, for contrast.
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
    :is(.st-key-room_alone, .st-key-room_follow) button {min-height: 44px; min-width: 44px;}
  /* plotly's toolbar would cover a narrow chart's title: a phone has the CSV download under each chart */
  [data-testid="stMain"] .js-plotly-plot .modebar-container {display: none;}
  [class*="st-key-scroll"]::before {content: "Swipe sideways to see the whole chart ↔"; font-size: 1rem;
    color: #555; position: sticky; left: 0;}
  [class*="st-key-scroll480_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 480px;}
  [class*="st-key-scroll560_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 560px;}
  [class*="st-key-scroll640_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 640px;}
  [class*="st-key-scroll720_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 720px;}
  [class*="st-key-scroll800_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 800px;}
  [class*="st-key-scroll960_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 960px;}
  [class*="st-key-scroll1120_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 1120px;}
  [class*="st-key-scroll1280_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 1280px;}
  [class*="st-key-scroll1600_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 1600px;}
  [class*="st-key-scroll2000_"] > div:has([data-testid="stPlotlyChart"]) {min-width: 2000px;}
}
</style>"""


def stylesheet(*, presenter: bool) -> None:
    """The app's one stylesheet: less empty space above the title, so a step fits a 1280×720 screen, and in
    presenter mode larger text and less chrome for projection."""
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
