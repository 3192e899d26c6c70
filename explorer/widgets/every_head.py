"""Multi-head attention's last step with a model's weights: every layer and head at a glance, and the ways to
open one of them on the chapter pages (a click on its small multiple, or a layer and head picked from the
keyboard), which set the sidebar's layer and head through ``session.set_settings``."""

from __future__ import annotations

import streamlit as st

from explorer.figures.charts import every_head_grid, labels_fit
from explorer.models.heads import every_head
from explorer.page_text import head_grid as words
from explorer.session.keys import PHONE
from explorer.session.state import set_settings
from explorer.settings import TRAINED, Settings
from explorer.widgets.charts import draw, style
from explorer.widgets.picking import on_pick

CHART_KEY = "every_head"  # the chart's key: the settings' layer and head are appended (a fresh selection each)
LAYER_KEY, HEAD_KEY, OPEN_KEY = "every_head_layer", "every_head_head", "every_head_open"


def open_head(layer: int, head: int) -> None:
    """Open ``layer`` and ``head`` (both from 1, as the sidebar counts) on the chapter pages."""
    set_settings(layer=layer, head=head - 1)


def _open_chosen(suffix: str) -> None:
    open_head(st.session_state[LAYER_KEY + suffix], st.session_state[HEAD_KEY + suffix])


def show_every_head(settings: Settings) -> None:
    """The grid of every layer's and head's attention weights, the keyboard route, and links to the pages."""
    found = every_head(settings)
    if found is None:
        st.info("With one token there is no previous token to look at; type a longer sentence.")
        return
    num_layers, num_heads = found.weights.shape[:2]
    name = "the small GPT" if settings.weights == TRAINED else "GPT-2"
    st.markdown(words.grid_text(name, num_layers, num_heads, found.shown, found.num_tokens))
    layer, head = settings.layer, settings.head + 1  # both from 1
    suffix = f":{layer}:{head}"  # new widgets once the settings change, so each starts from them
    labels, details = words.head_labels(found.summaries)
    title = words.grid_title(num_layers, num_heads)
    hidden = num_heads > words.SHORT_ABOVE or st.session_state.get(PHONE)  # on a phone they would be 9 px
    key = CHART_KEY + ("_wide" if hidden else "") + suffix  # css.py: a phone hides these (hover has them)
    options = dict(title=title, current=(layer, head), key=key, on_select=on_pick(key, open_head))
    draw(every_head_grid, "every-head", found.weights, labels, details, found.pieces, **options)
    st.markdown(words.open_text(layer, head))
    with st.form(f"every_head_form{suffix}", border=False, enter_to_submit=False):
        pick_layer, pick_head, go = st.columns([2, 2, 1], vertical_alignment="bottom")
        pick_layer.selectbox("Layer", range(1, num_layers + 1), index=layer - 1, key=LAYER_KEY + suffix)
        pick_head.selectbox("Head", range(1, num_heads + 1), index=head - 1, key=HEAD_KEY + suffix)
        go.form_submit_button("Open", on_click=_open_chosen, args=(suffix,), key=OPEN_KEY, width="stretch")
    links = st.columns(len(words.LINK_PAGES))
    for column, (page, page_title) in zip(links, words.LINK_PAGES, strict=True):
        column.page_link(page, label=f"{page_title}: layer {layer}, head {head}", icon=":material/arrow_forward:")
    st.caption(words.label_text(num_heads, written=labels_fit(num_layers, style())))
