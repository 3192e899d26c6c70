"""Simplified attention (section 3.3): dot-product scores, softmax weights and context vectors, no weights yet."""

import pandas as pd
import streamlit as st

import attention
from explorer import compute, figures, state, ui

settings = state.current()
pieces = ui.guard(compute.prepared, settings).pieces

QUERY = "simplified:query"  # the chosen query, kept while the widget is off screen
if QUERY not in st.session_state:
    linked = state.initial_param("query", "simplified")
    st.session_state[QUERY] = int(linked) if linked is not None and linked.isdigit() else 1
query = st.session_state[QUERY] = min(st.session_state[QUERY], len(pieces) - 1)
st.session_state["w_simplified_query"] = query
heading, picker = st.columns([3, 1], vertical_alignment="bottom")
heading.title("Simplified attention")
picker.selectbox(
    "Query token",
    range(len(pieces)),
    key="w_simplified_query",
    format_func=lambda i: f"x^({i + 1})  {figures.visible_token(pieces[i])}",
    on_change=lambda: st.session_state.update({QUERY: st.session_state["w_simplified_query"]}),
)
state.page_param("query", query)

view = ui.guard(compute.simplified_view, settings, query)
steps = ["Scores of one query", "Scores → weights", "Why torch.softmax", "The context vector"]
step = ui.stepper("simplified", [*steps, "All scores and weights at once", "All context vectors at once"])
inputs, scores, x = view.inputs, view.attn_scores[query], f"$x^{{({query + 1})}}$"

if step == 0:
    st.markdown(
        f"The **attention score** of the query {x} with each input $x^{{(j)}}$ is their **dot product**: multiply "
        "entry by entry and add. Vectors that point the same way score high. Hover a bar to see it written out."
    )
    fig = figures.dot_product_bars(
        scores, pieces, inputs[query], inputs, query=query, title=f"attn_scores of x^({query + 1})", style=ui.style()
    )
    ui.chart(fig, "attention-scores-row", key="scores_row")
    st.code(figures.dot_product_text(inputs[query], inputs[0], scores[0], query, 0), language=None, wrap_lines=True)
    ui.show_code(attention.simplified_attention)
elif step == 1:
    st.markdown(
        "Weights should be positive and sum to 1. Dividing by the row's sum gives a sum of 1, but a negative "
        "score would give a negative weight; **softmax** exponentiates first, so every weight is positive. "
        f"`softmax_naive` and `torch.softmax` differ here by at most {view.naive_vs_torch_max_difference:.2g}."
    )
    series = {"attn_scores / sum": view.by_sum, "softmax_naive": view.naive_softmax}
    series["torch.softmax"] = view.torch_softmax
    fig = figures.bars(
        series,
        pieces,
        title=f"attn_weights of x^({query + 1}), three ways",
        value_name="attention weight",
        style=ui.style(),
    )
    ui.chart(fig, "normalizations", key="normalizations")
    ui.show_code(attention.compare_normalizations, attention.normalize_by_sum, attention.softmax_naive)
elif step == 2:
    broken = int(pd.isna(view.overflow_naive).sum())
    st.markdown(
        f"Multiply the scores by 100: the largest becomes **{view.overflow_scores.max():.1f}**. In float32, "
        "exp() of anything above 88.7 is inf, and inf / inf is nan: "
        + (
            f"**`softmax_naive` gives nan for {broken} of {len(pieces)} tokens**. "
            if broken
            else "no score passes 88.7 here, so it survives. "
        )
        + "`torch.softmax` subtracts the row's maximum before exp(), so it cannot overflow."
    )
    series = {"softmax_naive": view.overflow_naive, "torch.softmax": view.overflow_torch}
    columns = {"key": [figures.visible_token(p) for p in pieces], "score×100": view.overflow_scores, **series}
    table = pd.DataFrame({name: [v if name == "key" else f"{v:.4g}" for v in c] for name, c in columns.items()})
    left, right = st.columns(2)
    with left:
        fig = figures.bars(
            series,
            pieces,
            title="Scores × 100, normalized",
            value_name="attention weight",
            decimals=2,
            style=ui.style(),
        )
        ui.chart(fig, "overflow", key="overflow")
    right.dataframe(table, hide_index=True, height=min(35 * (len(pieces) + 1) + 3, 380))
    ui.show_code(attention.overflow_demo, attention.softmax_naive)
elif step == 3:
    st.markdown(
        f"The **context vector** $z^{{({query + 1})}}$ is the sum of all inputs, each weighted by its attention "
        "weight. Each coloured block is one token's weighted input; the black mark is their sum."
        + (
            f" With {len(pieces)} tokens, the {figures.STACKED_TOKEN_LIMIT - 1} largest contributions have "
            "their own blocks and the grey block adds up the rest."
            if len(pieces) > figures.STACKED_TOKEN_LIMIT
            else ""
        )
    )
    shown = ", ".join(f"{v:.4f}" for v in view.context_vecs[query][:6])
    title = f"context_vec z^({query + 1}) = [{shown}{', …' if inputs.shape[1] > 6 else ''}]"
    fig = figures.stacked_contributions(view.contributions, pieces, title=title, style=ui.style())
    ui.chart(fig, "context-vector", key="contributions")
    ui.show_code(attention.context_contributions)
elif step == 4:
    st.markdown(
        "Every query at once: `attn_scores = inputs @ inputs.T` holds all dot products (row i is query i), and "
        "`torch.softmax(attn_scores, dim=-1)` normalizes each row. The outlined row is the query chosen above."
    )
    for column, name, options in zip(
        st.columns(2), ("attn_scores", "attn_weights"), ({"diverging": True}, {"zmin": 0.0}), strict=True
    ):
        with column:
            fig = figures.heatmap(
                getattr(view, name),
                pieces,
                pieces,
                title=name,
                value_name=name,
                highlight_row=query,
                style=ui.style(),
                **options,
            )
            if len(pieces) > 8:  # half a screen is too narrow for the cell values; hover still has them
                fig.data[0].text = fig.data[0].texttemplate = None
            ui.chart(fig, name.replace("_", "-"), key=name)
    ui.show_code(attention.simplified_attention)
else:
    difference = view.loop_max_difference
    st.markdown(
        "`context_vecs = attn_weights @ inputs` gives every context vector in one matrix product. "
        + (
            "(The chapter's for-loop version is skipped above 64 tokens.)"
            if difference is None
            else f"The chapter's two for loops give the same matrix: max |difference| = **{difference:.3g}**."
        )
    )
    dims = [f"dim {k}" for k in range(inputs.shape[1])]
    fig = figures.heatmap(
        view.context_vecs,
        pieces,
        dims,
        title="context_vecs = attn_weights @ inputs",
        value_name="context value",
        diverging=True,
        highlight_row=query,
        col_title="dimension",
        col_tokens=False,
        style=ui.style(),
    )
    ui.chart(fig, "context-vectors", key="context_vecs")
    ui.show_code(attention.simplified_attention, attention.attention_loop)
