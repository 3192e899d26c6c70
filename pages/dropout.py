"""Dropout: dropping attention weights while training, scaling the survivors, and the average of many draws."""

import numpy as np
import pandas as pd
import streamlit as st

import attention
from attention import figures
from attention.prose import cells
from attention.prose.cells import Notation
from attention.prose.glossary import term
from explorer import session, views, widgets
from explorer.page_text import questions
from explorer.settings import DEFAULTS

SAMPLES = session.DROPOUT_SAMPLES  # the page's own slider: how many draws to average

run = widgets.page("Dropout")
settings = run.settings
requested = session.whole_state(SAMPLES, 1000)
used = views.dropout_settings(settings)  # the book's p = 0.5 in training while the sidebar's dropout is off
book_run = run.but(dropout=used.dropout, training=used.training)
data = widgets.guard(views.dropout_view, book_run, requested, views.module_seed(settings, "dropout"))
st.session_state[SAMPLES] = min(requested, data.max_samples)  # kept while the slider is not shown
pieces, mask, active, p = data.pieces, data.mask, data.active, used.dropout
weights, keep, dropped = data.attn_weights, data.keep, data.dropped_weights
small = len(pieces) <= figures.TEXT_CELL_LIMIT  # small matrices fit under the stepper at 1280×720
beside, pair = figures.COLUMN_SHARES["beside"], figures.COLUMN_SHARES[2]
style = widgets.style(at_most=410 if small else None, share=beside)  # beside the step's words
pair_style = widgets.style(
    at_most=330 if small else None, shorter=0 if small else 24, share=pair
)  # room for the masked note

widgets.dropout_setting(settings, used, active)
steps = widgets.Steps("dropout")
IDLE = "Nothing is dropped: dropout acts only in **training mode with p > 0**. "


def columns(slider: bool = False):
    """A column of words beside a wider one for the chart; ``slider``: the draws slider heads the words."""
    text, plot = steps.beside()
    if slider:
        text.slider("Dropout draws to average", 1, data.max_samples, key=SAMPLES)
    return text, plot


def draw(plot, builder, name, *args, **options):
    """A figure in the plot column, in this page's style."""
    with plot:
        widgets.draw(builder, name, *args, style=style, **options)


def average_note(note) -> None:
    """What averaging many draws gives, and where the slider stops for a long text."""
    idle = "" if active else IDLE + "Every draw equals the weights, so their mean does too (up to float rounding). "
    sums = np.asarray(data.mean_weights, dtype=np.float64).sum(axis=-1)  # (num_tokens,)
    note.markdown(
        idle + f"The mean of {data.num_samples[-1]:,} draws (seeds {settings.seed}, {settings.seed + 1}, …) approaches "
        f"the undropped weights: the largest |mean − weight| is **{data.max_abs_error[-1]:.4f}**. Its rows sum to "
        f"{sums.min():.3f} to {sums.max():.3f}: the 1/(1 − p) scaling keeps each weight's average."
    )
    if data.max_samples < attention.dropout.MAX_DROPOUT_SAMPLES:
        note.caption(f"For {len(pieces):,} tokens the slider stops at {data.max_samples:,} draws.")


@steps.add("The book's demo on ones", attention.apply_dropout, attention.dropout_keep_mask)
def demo_on_ones():
    text, plot = columns()
    ones, labels = data.ones_demo, [str(k + 1) for k in range(6)]  # rows and columns counted from 1
    text.markdown(
        f"{term('dropout', '**Dropout**')} zeroes randomly chosen values while training, so the model cannot "
        "rely on a few of them; this reduces overfitting (fitting the training data too closely). It is switched "
        "off afterwards. GPT models usually train with p = 0.1 or 0.2; p = 0.5 makes the effect easy to see. "
        "The book's first demo: `torch.manual_seed(123)`, then `torch.nn.Dropout(0.5)` on "
        f"`torch.ones(6, 6)`. **{int((ones == 0).sum())}** of 36 entries were dropped to 0; the others became "
        f"**{ones.max():.0f}** = 1/(1 − 0.5). What this scaling does on average is the Row sums step's question."
    )
    widgets.book_caption(DEFAULTS, "dropout", where=text)  # this demo does not depend on the settings
    plain = {"row_title": "row", "col_title": "column", "row_tokens": False, "col_tokens": False, "decimals": 0}
    title = "Dropout(0.5) on torch.ones(6, 6)"
    draw(plot, figures.heatmap, "dropout-ones", ones, labels, labels, title=title, value_name="entry", **plain)


@steps.add("One dropout draw", attention.CausalAttention.steps)
def one_draw():
    text, plot = columns()
    where = (
        f"The book notes that attention can apply dropout in two places: to the {term('attention_weights')}, or "
        "after multiplying them by the values. It takes the first, the more common variant in practice: after the "
        "softmax, before the values. "
    )
    if not active:
        text.markdown(IDLE + where + "The weights are the causal weights (Causal mask page), unchanged.")
    else:
        lost, visible = int((~keep & ~mask).sum()), int((~mask).sum())
        text.markdown(
            where + f"Here the causal weights (Causal mask page), again after `torch.manual_seed({settings.seed})`. "
            f"Each weight is dropped with probability p = {p:.2f}: this draw dropped **{lost}** of the {visible} "
            "the mask left visible."
        )
    widgets.book_caption(settings, "dropout", where=text)
    title = "attn_weights after dropout"
    code, notation = "dropped_weights, dropout_mask = drop_with_mask(", Notation("dropped_weights")
    rate = p if active else 0.0  # dropout off: nothing is dropped
    explain = cells.dropped(weights, keep, rate, pieces, code=code, notation=notation)
    options = dict(title=title, value_name="attention weight after dropout", masked=mask, dropped=~keep)
    draw(plot, figures.heatmap, "dropped", dropped, pieces, pieces, explain=explain, **options)


@steps.add("Survivors × 1/(1−p)")
def survivors():
    text, plot = columns()
    kept = np.argwhere(keep & ~mask)  # the example: the last weight that survived, else the last row's first key
    query, key = tuple(kept[-1]) if len(kept) else (len(pieces) - 1, 0)
    if not active:
        text.markdown(IDLE + "Every weight survives, unscaled (factor 1):")
    else:
        text.markdown(
            f"Each weight survives with probability 1 − p = {1 - p:.2f}, and survivors are multiplied by "
            f"1/(1 − p) = **{data.scale:.4f}**. One survivor:"
        )
    if len(kept):
        row = {"query": pieces[query], "key": pieces[key], "before": weights[query, key], "after": dropped[query, key]}
        row = {k: [figures.visible_token(v) if isinstance(v, str) else f"{v:.4f}"] for k, v in row.items()}
        widgets.table(pd.DataFrame(row), where=text, hide_index=True)
    else:
        text.warning("This draw dropped every weight.")
    title = f"Attention weights of query “{figures.visible_token(pieces[query])}”, one row"
    bars = {"before dropout": weights[query], "after dropout": dropped[query]}
    draw(plot, figures.bars, "dropout-row", bars, pieces, title=title, value_name="attention weight")


@steps.add("Row sums")
def row_sums():
    text, plot = columns()
    sums = data.row_sums
    if not active:
        text.markdown(IDLE + f"Every row still sums to 1 (from {sums.min():.4f} to {sums.max():.4f}).")
    else:
        text.markdown(
            f"After dropout the rows no longer sum to 1: here they range from **{sums.min():.4f}** to "
            f"**{sums.max():.4f}**. A row's weights mix the values, so in this draw some context vectors come out "
            "larger and some smaller than without dropout."
        )
    with text:  # the next steps average many draws; nothing to predict while nothing is dropped
        query = len(pieces) - 1
        widgets.ask(questions.dropout_average_sum(data.row_sums, pieces, query, p, active), used)
    bars = {"row sum after dropout": data.row_sums, "before dropout": weights.sum(axis=1)}
    title = "Row sums of attn_weights"
    draw(plot, figures.bars, "dropout-row-sums", bars, pieces, title=title, value_name="row sum")


@steps.add("Many draws", attention.dropout_average)
def many_draws():
    text, plot = columns(slider=True)
    average_note(text)
    series = {"max |mean − attn_weights|": data.max_abs_error}
    options = {"x_title": "number of draws", "y_title": "max |mean − weight|", "log_x": True}
    draw(plot, figures.lines, "dropout-convergence", data.num_samples, series, title="Average of many draws", **options)


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
            options.update(style=pair_style)
            widgets.draw(figures.heatmap, name, matrix, pieces, pieces, **options)


steps.show()
