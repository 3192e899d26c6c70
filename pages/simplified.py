"""Simplified attention (section 3.3): dot-product scores, softmax weights and context vectors, no weights yet."""

import pandas as pd
import streamlit as st

import attention
from attention import figures
from attention.prose import cells
from attention.prose.cells import Notation
from attention.prose.glossary import term
from explorer import session, views, widgets
from explorer.page_text import questions
from explorer.page_text.even_weights import even_note

run = session.current_run()
settings = run.settings
pieces = widgets.guard(run.ready).pieces
QUERY = session.SIMPLIFIED_QUERY  # the chosen query, kept while the widget is off screen
query = session.kept_index(QUERY, "query_n", "simplified", default=1, count=len(pieces))
heading, picker = st.columns(2, vertical_alignment="bottom")  # the picker shows "x^(2) = inputs[1] ␣journey" whole
heading.title("Simplified attention")
kept = session.kept_widget(QUERY, "w_simplified_query", query)
label = lambda i: f"x^({i + 1}) = inputs[{i}] {figures.visible_token(pieces[i])}"  # noqa: E731
picker.selectbox("Query token", range(len(pieces)), format_func=label, **kept)
widgets.weights_caption(settings)
view = widgets.guard(views.simplified_view, run, query)
inputs, scores, n = view.inputs, view.attn_scores[query], query + 1  # the book's x^(n) is inputs[n - 1]
other_query = [] if query == 1 else [f"query x^({query + 1}), not the book's x^(2)"]  # the book follows inputs[1]
steps = widgets.Steps("simplified")


@steps.add("Scores of one query", attention.simplified_attention)
def one_query_scores():
    st.markdown(
        f"The **{term('attention_scores', 'attention scores')}** of the query x^({n}) (`inputs[{query}]`: Python "
        f"counts from 0) are its {term('dot_product', 'dot products')} with every input x^(j): multiply entry by "
        f"entry and add. The book names them `attn_scores_{n}`. A dot product is |a|·|b|·cos(angle): large when "
        "two vectors point the same way, and for a positive cosine larger when they are longer. Once the answer "
        "below is revealed, hover a bar of the scores to see it written out."
    )
    widgets.book_caption(settings, "one_query", also=other_query)
    chart = st.container()  # the inputs until the question is revealed, then the scores: the tallest is the answer
    st.code(figures.dot_product_text(inputs[query], inputs[0], scores[0], query, 0), language=None, wrap_lines=True)
    revealed = widgets.ask(questions.most_attended(view.torch_softmax, pieces, query), settings)
    with chart:
        if revealed:
            row = dict(query=query, title=f"attn_scores_{n}: x^({n}) · x^(j)", key="scores_row")
            widgets.draw(figures.dot_product_bars, "attention-scores-row", scores, pieces, inputs[query], inputs, **row)
        else:
            dims = [f"dim {k}" for k in range(inputs.shape[1])]
            options = dict(title=f"inputs: predict from these (x^({n}) outlined)", value_name="embedding value")
            options.update(row_title="token", col_title=figures.DIMENSION, col_tokens=False, highlight_row=query)
            options.update(style=widgets.style(at_most=300))  # as bars
            widgets.draw(figures.heatmap, "simplified-inputs", inputs, pieces, dims, **options)
            st.markdown(f"The scores `attn_scores_{n}` replace this chart when the answer is revealed.")


@steps.add("Scores → weights", attention.compare_normalizations, attention.normalize_by_sum, attention.softmax_naive)
def scores_to_weights():
    st.markdown(
        f"The {term('attention_weights', 'attention weights')} `attn_weights_{n}` normalize the scores so they sum "
        "to 1. Dividing by the row's sum does that, but a negative score would give a negative weight. "
        f"**{term('softmax')}** exponentiates first, so every weight is positive and the row is a probability "
        f"distribution. `softmax_naive` and `torch.softmax` differ here by at most "
        f"{view.naive_vs_torch_max_difference:.2g}."
    )
    widgets.book_caption(settings, "one_query", also=other_query)
    series = {f"attn_scores_{n} / sum": view.by_sum, "softmax_naive": view.naive_softmax}
    series["torch.softmax"] = view.torch_softmax
    title = f"attn_weights_{n}, three ways"
    widgets.draw(figures.bars, "normalizations", series, pieces, title=title, value_name="attention weight")


@steps.add("Why torch.softmax", attention.overflow_demo, attention.softmax_naive)
def why_torch_softmax():
    broken = int(pd.isna(view.overflow_naive).sum())
    outcome = "no score passes 88.7 here, so it survives. "
    if broken:
        outcome = f"**`softmax_naive` gives nan for {broken} of {len(pieces)} tokens**. "
    st.markdown(
        f"Multiply the scores `attn_scores_{n}` by 100: the largest becomes **{view.overflow_scores.max():.1f}**. "
        f"In float32, exp() of anything above 88.7 is inf, and inf / inf is nan (not a number): {outcome}"
        "`torch.softmax` subtracts the row's maximum before exp(), so it cannot overflow."
    )
    series = {"softmax_naive": view.overflow_naive, "torch.softmax": view.overflow_torch}
    columns = {"key": [figures.visible_token(p) for p in pieces], "score×100": view.overflow_scores, **series}
    table = pd.DataFrame({name: [v if name == "key" else f"{v:.4g}" for v in c] for name, c in columns.items()})
    left, right = st.columns(2)
    with left:
        options = dict(title="Scores × 100, normalized", value_name="attention weight", decimals=2)
        widgets.draw(figures.bars, "overflow", series, pieces, **options)
    widgets.table(table, where=right, hide_index=True, height=min(35 * (len(pieces) + 1) + 3, 380))


@steps.add("The context vector", attention.context_contributions)
def context_vector():
    st.markdown(
        f"The **{term('context_vector', 'context vector')}** z^({n}), the book's `context_vec_{n}`, is the sum of all "
        f"inputs, each multiplied by its attention weight. It is an enriched embedding of x^({n}): it carries "
        "information from every token. Each colored block is one token's weighted input; the black mark is their sum."
        + (
            f" With {len(pieces)} tokens, the {figures.STACKED_TOKEN_LIMIT - 1} largest contributions have "
            "their own blocks and the gray block adds up the rest."
            if len(pieces) > figures.STACKED_TOKEN_LIMIT
            else ""
        )
    )
    widgets.book_caption(settings, "one_query", also=other_query)
    shown = ", ".join(f"{v:.4f}" for v in view.context_vecs[query][:6])
    options = dict(title=f"context_vec_{n} = [{shown}{', …' if inputs.shape[1] > 6 else ''}]", key="contributions")
    widgets.draw(figures.stacked_contributions, "context-vector", view.contributions, pieces, **options)


@steps.add("All scores and weights at once", attention.simplified_attention)
def all_scores_and_weights():
    st.markdown(
        "Every query at once: `attn_scores = inputs @ inputs.T` holds all dot products, and "
        "`attn_weights = torch.softmax(attn_scores, dim=-1)` normalizes each row. Row i is the query x^(i), "
        "`inputs[i - 1]`; column j is the input x^(j) it is compared with. "
        f"The outlined row is x^({n}): `attn_scores_{n}` and `attn_weights_{n}`."
    )
    widgets.book_caption(settings, "simplified")
    notation = Notation("attn_scores", left="x", right="x")  # section 3.3 multiplies the inputs themselves
    all_scores = cells.scores(inputs, inputs, pieces, code="attn_scores = inputs @ inputs.T", notation=notation)
    code, notation = "attn_weights = torch.softmax(", Notation("attn_weights")
    all_weights = cells.weights(view.attn_scores, pieces, code=code, notation=notation)
    panels = (("attn_scores", {"kind": "signed"}, all_scores), ("attn_weights", {"kind": "weights"}, all_weights))
    for column, (name, options, explain) in zip(st.columns(2), panels, strict=True):
        options.update(title=name, value_name=name, highlight_row=query, key=name, explain=explain)
        options.update(style=widgets.style(shorter=40, share=figures.COLUMN_SHARES[2]))  # under the text
        with column:  # the cell values that fit half a screen; hover has them all
            widgets.draw(figures.heatmap, name.replace("_", "-"), getattr(view, name), pieces, pieces, **options)
    gap = views.near_even(view.attn_weights)
    widgets.even_note(even_note(gap, len(pieces), settings, masked=False, projected=False))


@steps.add("All context vectors at once", attention.simplified_attention, attention.attention_loop)
def all_context_vectors():
    difference = view.loop_max_difference
    st.markdown(
        "`all_context_vecs = attn_weights @ inputs` gives every context vector in one matrix product. "
        + (
            "(The check against the chapter's for loops is skipped above 64 tokens.)"
            if difference is None
            else "Computed with for loops instead (the chapter's nested loops for the scores, its weighted sum "
            f"for every query), they agree: max |difference| = **{difference:.3g}**."
        )
    )
    widgets.book_caption(settings, "simplified")
    dims = [f"dim {k}" for k in range(inputs.shape[1])]
    code, notation = "context_vecs = attn_weights @ inputs", Notation("all_context_vecs", right="x")
    explain = cells.context(view.attn_weights, inputs, pieces, dims, code=code, notation=notation)
    options = dict(value_name="context value", kind="signed", col_title=figures.DIMENSION, col_tokens=False)
    options.update(title="all_context_vecs = attn_weights @ inputs", highlight_row=query, key="context_vecs")
    widgets.draw(figures.heatmap, "context-vectors", view.context_vecs, pieces, dims, explain=explain, **options)


steps.show()
