"""Q, K, V & scaling (section 3.4): trainable projections, 1/sqrt(d_k), and a lab that shows why it is needed."""

import math

import streamlit as st

import attention
from attention import figures
from attention.prose import cells
from attention.prose.cells import Notation
from attention.prose.glossary import term
from explorer import models, session, views, widgets
from explorer.page_text import qkv as notes
from explorer.page_text import questions
from explorer.page_text.even_weights import even_note
from explorer.page_text.qkv import D_KS, TEMPERATURES

run = widgets.page("Q, K, V & scaling")
settings = run.settings
pieces = widgets.guard(run.ready).pieces
v2_seed = views.module_seed(settings, "v2")  # the book builds SelfAttention_v2 after seed 789
view = widgets.guard(views.qkv_view, run, v2_seed)
trace = view.steps  # SelfAttention_v1's tensors, one per step of its forward
example, d_k = min(1, len(pieces) - 1), trace.keys.shape[-1]
steps = widgets.Steps("qkv")


def matrix(name: str, z, explain, *, title: str = "", rows=None, keys: bool = False, **options) -> widgets.Panel:
    """A named heatmap: token rows (example outlined), token (``keys``) or d_out columns, cells explained or None."""
    cols = pieces if keys else [f"out {j}" for j in range(z.shape[1])]
    col_title = "key" if keys else "output dim (counted from 0)"
    options = {"kind": "signed", "row_title": "token", "col_title": col_title, **options}
    if rows is None:
        rows, options["highlight_row"] = pieces, options.get("highlight_row", example)
    options.update(title=title or name, value_name=name, col_tokens=keys)
    return widgets.panel(name, figures.heatmap, z, rows, cols, explain=explain, **options)


def lab_lines(name: str, title: str, lab) -> widgets.Panel:
    """One scaling-lab measurement against d_k, unscaled and scaled."""
    options = dict(title=title, x_title="d_k", y_title=title, log_x=True, x_ticks=D_KS, extra_height=70)
    return widgets.panel(name, figures.lines, D_KS, notes.lab_series(lab, name), **options)


def lab_controls():
    """The lab's two controls, side by side, and its measurements for them: (the lab, the keys per row)."""
    left, right = st.columns(2)
    kept = session.kept_widget(session.QKV_TEMPERATURE, "w_qkv_temperature", 1.0)
    label = "Temperature (divides every score)"
    temperature = left.select_slider(label, TEMPERATURES, help=notes.TEMPERATURE_HELP, **kept)
    num_keys = right.slider("Keys per row", 2, 256, **session.kept_widget(session.QKV_NUM_KEYS, "w_qkv_num_keys", 8))
    return widgets.guard(views.scaling_view, D_KS, num_keys, float(temperature), settings.seed), num_keys


@steps.add("W_query, W_key, W_value", attention.SelfAttention_v1)
def projection_weights():
    st.markdown(notes.projections_text(models.origin(settings), settings.seed))
    dims = [f"in {i}" for i in range(trace.inputs.shape[1])]
    w_options = {"rows": dims, "row_title": "input dim (counted from 0)", "row_tokens": False}
    widgets.side_by_side(*(matrix(w, getattr(view, w), None, **w_options) for w in ("W_query", "W_key", "W_value")))


@steps.add("Queries, keys, values", attention.SelfAttention_v1.steps)
def queries_keys_values():
    st.markdown(
        "`queries = x @ W_query`, `keys = x @ W_key`, `values = x @ W_value`: each token gets a "
        f"{term('query_key_value', 'query, a key and a value')}. The query is what it looks for, the key what it "
        "offers to be found by, the value what it passes on."
        + notes.example_rows(trace, example, query="queries", key="keys", value="values")
    )
    out, panels = cells.dims(trace.queries.shape[1], "out"), []
    for name, weight in (("queries", "W_query"), ("keys", "W_key"), ("values", "W_value")):
        code, notation = f"{name} = x @ self.{weight}", Notation(name, left=name[0], weight_matrix=weight)
        explain = cells.projections(trace.inputs, getattr(view, weight), pieces, out, code=code, notation=notation)
        panels.append(matrix(name, getattr(trace, name), explain))
    widgets.side_by_side(*panels)
    widgets.explain_cell()
    widgets.book_caption(settings, "qkv_steps")


@steps.add("Scores, then ÷ √d_k", attention.SelfAttention_v1.steps)
def scaled_scores():
    st.markdown(
        "`attn_scores = queries @ keys.T` pairs every query with every key. Before the softmax they are divided by "
        f"√{term('d_k')}, where d_k = `keys.shape[-1]` = d_out = {d_k}: √{d_k} = {math.sqrt(d_k):.4f}. When query and "
        "key entries have mean 0 and variance 1, this keeps the scores' spread near 1 whatever d_k (steps 5 and 6 show "
        "why this matters). Because of this division, the book, after Vaswani et al. (2017), calls the mechanism "
        f"**{term('scaled_dot_product')}**."
        + notes.example_rows(trace, example, attn_scores="attn_scores", **{"attn_scores / √d_k": "scaled_scores"})
    )
    scaled_title = f"attn_scores / √{d_k}"
    shared = dict(keys=True, row_title="query", value_range=figures.shared_range(trace.attn_scores, kind="signed"))
    code, notation = "attn_scores = queries @ keys.T", Notation("attn_scores")
    scores = cells.scores(trace.queries, trace.keys, pieces, code=code, notation=notation)
    code, notation = "torch.softmax(attn_scores / keys.shape[-1] ** 0.5", Notation(scaled_title)
    scaled = cells.scores(trace.queries, trace.keys, pieces, scaled=True, code=code, notation=notation)
    widgets.side_by_side(  # one colour scale: the scaled scores' paler colours are the point of ÷ √d_k
        matrix("attn_scores", trace.attn_scores, scores, **shared),
        matrix("scaled_scores", trace.scaled_scores, scaled, title=scaled_title, **shared),
    )
    widgets.explain_cell()
    widgets.book_caption(settings, "qkv_steps")
    row = (trace.attn_scores[example], trace.attn_weights[example], d_k, example)
    widgets.ask(questions.scaling_direction(*row), settings)  # the next step shows the weights


@steps.add("Weights and context vectors", attention.SelfAttention_v1.steps)
def weights_and_context():
    st.markdown(
        "`attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)` turns each row into attention "
        "weights that sum to 1. `context_vec = attn_weights @ values` mixes the values into one context vector per "
        "token, d_out numbers each."
        + notes.example_rows(trace, example, attn_weights="attn_weights", context_vec="output")
    )
    code, notation = "attn_weights = torch.softmax(", Notation("attn_weights", scaled=True)
    weights = cells.weights(trace.scaled_scores, pieces, code=code, notation=notation)
    code, notation = "context_vec = attn_weights @ values", Notation("context_vec", right="v")
    out = cells.dims(trace.queries.shape[1], "out")
    context = cells.context(trace.attn_weights, trace.values, pieces, out, code=code, notation=notation)
    widgets.side_by_side(
        matrix("attn_weights", trace.attn_weights, weights, keys=True, row_title="query", kind="weights"),
        matrix("output", trace.output, context, title="context_vec = attn_weights @ values"),
    )
    widgets.even_note(even_note(views.near_even(trace.attn_weights), len(pieces), settings, masked=False))
    widgets.explain_cell()
    widgets.book_caption(settings, "v1")


@steps.add("Why scale: saturation", attention.scaling_lab)
def saturation():
    lab, num_keys = lab_controls()
    st.markdown(notes.saturation_text(lab, num_keys))
    largest = lab_lines("max_weight", "largest weight in a row", lab)
    widgets.side_by_side(largest, lab_lines("entropy", "row entropy (nats)", lab))


@steps.add("Why scale: gradients", attention.scaling_lab)
def gradients():
    lab, num_keys = lab_controls()
    st.markdown(notes.gradients_text(lab))
    one_row = {notes.UNSCALED: lab.example_unscaled, notes.SCALED: lab.example_scaled}
    keys = [f"k{j + 1}" for j in range(num_keys)]
    options = dict(title=f"one softmax row {notes.TOP}", value_name="attention weight", decimals=2, extra_height=70)
    row = widgets.panel("example_row", figures.bars, one_row, keys, **options)
    widgets.side_by_side(lab_lines("grad_norm", "gradient norm", lab), row)


@steps.add("SelfAttention_v1 = v2", attention.SelfAttention_v2, attention.load_v2_weights_into_v1)
def v1_equals_v2():
    st.markdown(notes.v1_v2_text(v2_seed, view.v1_v2_max_difference, trained_head=models.head_name(settings)))
    shared = dict(highlight_row=None, value_range=figures.shared_range(view.v1_output, view.v2_output, kind="signed"))
    widgets.side_by_side(
        matrix("v1_output", view.v1_output, None, title="SelfAttention_v1 with v2's weights", **shared),
        matrix("v2_output", view.v2_output, None, title="SelfAttention_v2", **shared),
    )
    widgets.book_caption(settings, "v2")


steps.show()
