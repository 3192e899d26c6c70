"""Q, K, V & scaling (section 3.4): trainable projections, 1/sqrt(d_k), and a lab that shows why it is needed."""

import math

import streamlit as st

import attention
from explorer import book_mode, compute, figures, questions, state, ui, weights

settings = state.current()
st.title("Q, K, V & scaling")
weights.caption(settings)
pieces = ui.guard(compute.prepared, settings).pieces
v2_seed = book_mode.module_seed(settings, "v2")  # the book builds SelfAttention_v2 after seed 789
view = ui.guard(compute.qkv_view, settings, v2_seed)
steps = view.steps
titles = ["W_query, W_key, W_value", "Queries, keys, values", "Scores, then ÷ √d_k", "Weights and context vectors"]
step = ui.stepper("qkv", [*titles, "Why scale: saturation", "Why scale: gradients", "SelfAttention_v1 = v2"])
example, d_k = min(1, len(pieces) - 1), steps.keys.shape[-1]
D_KS = tuple(2**k for k in range(11))  # d_k = 1 … 1024
TEMPERATURES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
UNSCALED, SCALED = "unscaled", "scaled by 1/√d_k"
TEXT_COLUMNS = {1: figures.TEXT_CELL_LIMIT, 2: 8, 3: 4}  # widest heatmap whose cell values fit, by figures per row


def matrix(name: str, z, *, title: str = "", rows=None, keys: bool = False, **options) -> tuple:
    """A named heatmap with token rows (example row outlined) and token (``keys``) or d_out columns."""
    cols = pieces if keys else [f"out {j}" for j in range(z.shape[1])]
    options = {"diverging": True, "row_title": "token", "col_title": "key" if keys else "output dim", **options}
    if rows is None:
        rows, options["highlight_row"] = pieces, options.get("highlight_row", example)
    options.update(title=title or name, value_name=name, col_tokens=keys, style=ui.style())
    return name, figures.heatmap(z, rows, cols, **options)


def side_by_side(*named_figures: tuple) -> None:
    """Figures in columns; heatmaps too wide for their column lose their cell values (hover still has them)."""
    for column, (name, fig) in zip(st.columns(len(named_figures)), named_figures, strict=True):
        for trace in fig.data:
            if trace.type == "heatmap" and len(trace.z[0]) > TEXT_COLUMNS[len(named_figures)]:
                trace.text = trace.texttemplate = None
        with column:
            ui.chart(fig, name.replace("_", "-"), key=name)


def example_rows(**names: str) -> str:
    """The example token's row of each step's matrix (label=step name), as the book prints them, indexed as
    in Python: the book's query 2, x^(2), is ``inputs[1]``."""
    rows = [f"`{k}[{example}] = {ui.first_values(getattr(steps, n)[example:], 8)}`" for k, n in names.items()]
    return f" Query {example + 1}, x^({example + 1}) = `inputs[{example}]`, outlined: " + ", ".join(rows) + "."


def lab_lines(name: str, title: str, lab: dict) -> tuple:
    series = {UNSCALED: getattr(lab, f"unscaled_{name}"), SCALED: getattr(lab, f"scaled_{name}")}
    fig = figures.lines(D_KS, series, title=title, x_title="d_k", y_title=title, log_x=True, style=ui.style())
    return name, fig.update_xaxes(tickvals=D_KS).update_layout(height=ui.style().min_height + 70)


if step == 0:
    st.markdown(
        "Each embedding is projected three ways by **trainable** d_in × d_out matrices, "
        + (
            weights.origin(settings)
            or f"created with `torch.rand` after `torch.manual_seed({settings.seed})` as in the book. "
            "Training would adjust them."
        )
    )
    dims = [f"in {i}" for i in range(steps.inputs.shape[1])]
    w_options = {"rows": dims, "row_title": "input dim", "row_tokens": False}
    side_by_side(*(matrix(w, getattr(view, w), **w_options) for w in ("W_query", "W_key", "W_value")))
    ui.show_code(attention.SelfAttention_v1)
elif step == 1:
    st.markdown(
        "`queries = x @ W_query`, `keys = x @ W_key`, `values = x @ W_value`: each token gets a query (what it "
        "looks for), a key (what it offers to be found by) and a value (what it passes on)."
        + example_rows(queries="queries", keys="keys", values="values")
    )
    side_by_side(*(matrix(n, getattr(steps, n)) for n in ("queries", "keys", "values")))
    book_mode.caption(settings, "qkv_steps")
    ui.show_code(attention.SelfAttention_v1.steps)
elif step == 2:
    st.markdown(
        "`attn_scores = queries @ keys.T` pairs every query with every key. Before the softmax they are divided by "
        f"√d_k = √{d_k} = {math.sqrt(d_k):.4f}, so their spread does not grow with d_k (the next steps show why)."
        + example_rows(attn_scores="attn_scores", scaled_scores="scaled_scores")
    )
    scaled_title = f"scaled_scores = attn_scores / √{d_k}"
    shared = dict(keys=True, row_title="query", value_range=figures.shared_range(steps.attn_scores, kind="signed"))
    side_by_side(  # one colour scale: the scaled scores' paler colours are the point of ÷ √d_k
        matrix("attn_scores", steps.attn_scores, **shared),
        matrix("scaled_scores", steps.scaled_scores, title=scaled_title, **shared),
    )
    book_mode.caption(settings, "qkv_steps")
    row = (steps.attn_scores[example], steps.attn_weights[example], d_k, example)
    questions.ask(questions.scaling_direction(*row), settings)  # step 4 shows the weights
    ui.show_code(attention.SelfAttention_v1.steps)
elif step == 3:
    st.markdown(
        "`torch.softmax(scaled_scores, dim=-1)` turns each row into weights that sum to 1; `attn_weights @ values` "
        "mixes the values into one **context vector** per token, d_out numbers each."
        + example_rows(attn_weights="attn_weights", context_vecs="output")
    )
    side_by_side(
        matrix("attn_weights", steps.attn_weights, keys=True, row_title="query", kind="weights"),
        matrix("output", steps.output, title="context_vecs = attn_weights @ values"),
    )
    book_mode.caption(settings, "v1")
    ui.show_code(attention.SelfAttention_v1.steps)
elif step in (4, 5):
    left, right = st.columns(2)
    kept_temperature = state.kept_widget("qkv:temperature", "w_qkv_temperature", 1.0)
    temperature = left.select_slider(
        "Temperature (divides every score)",
        TEMPERATURES,
        help="Every score is divided by this number before the softmax, on top of ÷ √d_k. Above 1 it "
        "flattens the weights (closer to uniform), below 1 it sharpens them: the same lever as √d_k, "
        "turned by hand, so you can see how much the spread of the scores decides saturation.",
        **kept_temperature,
    )
    num_keys = right.slider("Keys per row", 2, 256, **state.kept_widget("qkv:num_keys", "w_qkv_num_keys", 8))
    lab = ui.guard(compute.scaling_view, D_KS, num_keys, float(temperature), settings.seed)
    top = f"at d_k = {D_KS[-1]}"
    if step == 4:
        st.markdown(
            f"Dot products of random d_k-dim queries and keys spread like √d_k, so unscaled the softmax saturates: "
            f"{top} the largest weight averages **{lab.unscaled_max_weight[-1]:.2f}**, entropy "
            f"**{lab.unscaled_entropy[-1]:.2f}** nats. Scaled: **{lab.scaled_max_weight[-1]:.2f}** and "
            f"**{lab.scaled_entropy[-1]:.2f}** (uniform: log {num_keys} = {math.log(num_keys):.2f})."
        )
        side_by_side(
            lab_lines("max_weight", "largest weight in a row", lab), lab_lines("entropy", "row entropy (nats)", lab)
        )
    else:
        grads = lab.unscaled_grad_norm
        st.markdown(
            "Training needs the gradient of the output with respect to the scores (measured by autograd). Unscaled "
            f"it falls from **{grads[0]:.3f}** at d_k = 1 to **{grads[-1]:.3f}** {top}; scaled it is still "
            f"**{lab.scaled_grad_norm[-1]:.3f}**. A saturated row barely learns."
        )
        one_row = {UNSCALED: lab.example_unscaled, SCALED: lab.example_scaled}
        keys = [f"k{j + 1}" for j in range(num_keys)]
        row_fig = figures.bars(
            one_row, keys, title=f"one softmax row {top}", value_name="attention weight", decimals=2, style=ui.style()
        )
        row_fig.update_layout(height=ui.style().min_height + 70)
        side_by_side(lab_lines("grad_norm", "gradient norm", lab), ("example_row", row_fig))
    ui.show_code(attention.scaling_lab)
else:
    st.markdown(
        f"`SelfAttention_v2`, built after `torch.manual_seed({v2_seed})` (the book uses 789), uses `nn.Linear`, "
        "which stores each weight transposed (d_out × d_in) and initializes it differently. Copy v2's weights, "
        "transposed, into v1 and the outputs agree: max |difference| = "
        f"**{view.v1_v2_max_difference:.3g}**."
    )
    shared = dict(highlight_row=None, value_range=figures.shared_range(view.v1_output, view.v2_output, kind="signed"))
    side_by_side(
        matrix("v1_output", view.v1_output, title="SelfAttention_v1 with v2's weights", **shared),
        matrix("v2_output", view.v2_output, title="SelfAttention_v2", **shared),
    )
    book_mode.caption(settings, "v2")
    ui.show_code(attention.SelfAttention_v2, attention.load_v2_weights_into_v1)
