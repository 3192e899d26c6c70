"""Dropout: dropping attention weights while training, scaling the survivors, and the average of many draws."""

from dataclasses import replace

import pandas as pd
import streamlit as st

import attention
from explorer import cells, figures, session, views, widgets
from explorer.cells import Notation
from explorer.page_text import dropout as notes
from explorer.page_text import questions
from explorer.session import keys
from explorer.settings import DEFAULTS

SAMPLES = keys.DROPOUT_SAMPLES  # the page's own slider: how many draws to average

run = session.current_run()
settings = run.settings
st.title("Dropout")
widgets.weights_caption(settings)
requested = session.whole_state(SAMPLES, 1000)
used = views.dropout_settings(settings)  # the book's p = 0.5 in training while the sidebar's dropout is off
data = widgets.guard(
    views.dropout_view,
    run.but(dropout=used.dropout, training=used.training),
    requested,
    views.module_seed(settings, "dropout"),
)
st.session_state[SAMPLES] = min(requested, data.max_samples)  # kept while the slider is not shown
pieces, mask, active, p = data.pieces, data.mask, data.active, used.dropout
weights, keep, dropped = data.attn_weights, data.keep, data.dropped_weights
style = pair_style = widgets.style()
if len(pieces) <= figures.TEXT_CELL_LIMIT:  # small matrices fit under the stepper at 1280×720
    style = replace(style, max_height=min(style.max_height, 410))
    pair_style = replace(style, max_height=min(style.max_height, 330))

widgets.dropout_setting(settings, used, active)
steps = widgets.Steps("dropout")


def columns(slider: bool = False):
    """A column of words beside a wider one for the chart; ``slider``: the draws slider heads the words."""
    text, plot = st.columns([1, 2], gap="medium")
    if slider:
        text.slider("Dropout draws to average", 1, data.max_samples, key=SAMPLES)
    return text, plot


def draw(plot, builder, name, *args, **options):
    """A figure in the plot column, in this page's style."""
    with plot:
        widgets.draw(builder, name, *args, style=style, **options)


def average_note(note) -> None:
    """What averaging many draws gives, and where the slider stops for a long text."""
    note.markdown(notes.average_text(data, settings.seed))
    if data.max_samples < attention.dropout.MAX_DROPOUT_SAMPLES:
        note.caption(f"For {len(pieces):,} tokens the slider stops at {data.max_samples:,} draws.")


@steps.add("The book's demo on ones")
def demo_on_ones():
    text, plot = columns()
    ones, labels = data.ones_demo, [str(k + 1) for k in range(6)]  # rows and columns counted from 1
    text.markdown(notes.ones_text(ones))
    widgets.book_caption(DEFAULTS, "dropout", where=text)  # this demo does not depend on the settings
    plain = {"row_title": "row", "col_title": "column", "row_tokens": False, "col_tokens": False, "decimals": 0}
    title = "Dropout(0.5) on torch.ones(6, 6)"
    draw(plot, figures.heatmap, "dropout-ones", ones, labels, labels, title=title, value_name="entry", **plain)
    with text:
        widgets.show_code(attention.apply_dropout, attention.dropout_keep_mask)


@steps.add("One dropout draw")
def one_draw():
    text, plot = columns()
    text.markdown(notes.draw_text(data, settings.seed, p))
    widgets.book_caption(settings, "dropout", where=text)
    title = "attn_weights after dropout"
    code, notation = "dropped_weights, dropout_mask = drop_with_mask(", Notation("dropped_weights")
    rate = p if active else 0.0  # dropout off: nothing is dropped
    explain = cells.dropped(weights, keep, rate, pieces, code=code, notation=notation)
    options = dict(title=title, masked=mask, explain=explain)
    draw(plot, figures.dropout_heatmap, "dropped", dropped, keep, pieces, pieces, **options)
    with text:
        widgets.explain_cell()
        widgets.show_code(attention.CausalAttention.steps)


@steps.add("Survivors × 1/(1−p)")
def survivors():
    text, plot = columns()
    query, key = notes.example_cell(data)
    text.markdown(notes.survivors_text(data))
    if (keep & ~mask).any():
        widgets.table(pd.DataFrame(notes.survivor_row(data, query, key)), where=text, hide_index=True)
    else:
        text.warning("This draw dropped every weight.")
    title = f"Weights of query “{figures.visible_token(pieces[query])}”, one row"
    bars = {"before dropout": weights[query], "after dropout": dropped[query]}
    draw(plot, figures.bars, "dropout-row", bars, pieces, title=title, value_name="attention weight")


@steps.add("Row sums")
def row_sums():
    text, plot = columns()
    text.markdown(notes.row_sums_text(data))
    with text:  # the next steps average many draws
        query = len(pieces) - 1
        widgets.ask(questions.dropout_average_sum(data.row_sums, pieces, query, p, active), used)
    bars = {"row sum after dropout": data.row_sums, "before dropout": weights.sum(axis=1)}
    title = "Row sums of attn_weights"
    draw(plot, figures.bars, "dropout-row-sums", bars, pieces, title=title, value_name="row sum")


@steps.add("Many draws")
def many_draws():
    text, plot = columns(slider=True)
    average_note(text)
    series = {"max |mean − attn_weights|": data.max_abs_error}
    options = {"x_title": "number of draws", "y_title": "max |mean − weight|", "log_x": True}
    draw(plot, figures.lines, "dropout-convergence", data.num_samples, series, title="Average of many draws", **options)
    with text:
        widgets.show_code(attention.dropout_average)


@steps.add("Mean vs weights")
def mean_vs_weights():
    _, plot = columns(slider=True)
    average_note(plot)  # the note sits beside the slider, the heatmaps below
    panels = (
        (data.mean_weights, f"Mean of {data.num_samples[-1]:,} draws", "dropout-mean"),
        (weights, "attn_weights without dropout", "dropout-undropped"),
    )
    for column, (matrix, title, name) in zip(st.columns(2), panels, strict=True):
        with column:
            options = dict(title=title, value_name="attention weight", masked=mask, kind="weights")
            options.update(style=pair_style, cell_text=len(pieces) <= 8)
            widgets.draw(figures.heatmap, name, matrix, pieces, pieces, **options)


steps.show()
