"""Multi-head attention: heads side by side (the wrapper), then one projection split into heads (the efficient way)."""

import pandas as pd
import streamlit as st

import attention
from attention import figures
from attention.prose import cells
from attention.prose.cells import Notation
from explorer import session, views, widgets
from explorer.page_text import first_values, questions
from explorer.page_text import multihead as notes
from explorer.page_text.even_weights import even_note
from explorer.runtime.memory import SHARED_D_OUT_LIMIT
from explorer.settings import RANDOM

run = widgets.page("Multi-head attention")
settings = run.settings
data = widgets.guard(views.multihead_view, run)
pieces, mask, dropout_on = data.pieces, data.mask, data.dropout_active
num_heads, num_tokens, d_out = settings.num_heads, len(pieces), settings.d_out  # d_out: each wrapper head's
mha_d_out = data.efficient_output.shape[-1]  # d_out of MultiHeadAttention: the same, except a trained layer's
head_dim = mha_d_out // num_heads
widgets.truncation_notice(data.truncated_from, settings.context_length)
HEAD = session.MULTIHEAD_HEAD
head = session.kept_index(HEAD, "head_n", "multihead", default=0, count=num_heads)
group_size, group = notes.head_group(head, num_heads, num_tokens)  # the heads a grid draws at once
weights_name = "attn_weights" + (" after dropout" if dropout_on else "")
p = settings.dropout if dropout_on else 0.0  # the cell panel's dropout rate
is_trained = settings.weights != RANDOM
steps = widgets.Steps("multihead")


def head_control(label: str, key: str, options, scale: int, format_func) -> None:
    """A control for the inspected head (scale 1) or its group of heads (scale group_size); the choice lives in HEAD."""
    st.session_state[key] = head // scale
    update = lambda: st.session_state.update({HEAD: st.session_state[key] * scale})  # noqa: E731
    st.segmented_control(label, options, key=key, required=True, on_change=update, format_func=format_func)


def head_weights(scores, keep, shown: range, *, stacked: bool) -> cells.Cells:
    """The weights of the heads ``shown``, from a module's (scaled, −∞ where masked) scores and dropout's draw;
    ``stacked``: ``MultiHeadAttention``'s heads, in one tensor, not the wrapper's."""
    code, notation = "attn_weights = torch.softmax(", Notation("attn_weights", scaled=True)
    return cells.head_weights(scores, keep, p, shown, pieces, code=code, notation=notation, stacked=stacked)


def heads_grid(weights, title: str, name: str, explain: cells.Cells) -> None:
    """The heads of ``group`` in one row on one colour scale, with a control to page through the heads."""
    if num_heads > group_size:
        spans = notes.group_spans(num_heads, group_size)
        head_control("Heads shown", "head_group", range(len(spans)), group_size, spans.__getitem__)
    titles = notes.head_titles(group, head, num_heads)
    layout = dict(title=title, masked=mask, columns=len(group), max_row_height=160 + 720 // len(group))
    layout.update(explain=explain)  # the cell values that fit a head's share of the width; hover has them all
    widgets.draw(figures.heatmap_grid, name, weights[group.start : group.stop], titles, pieces, pieces, **layout)
    widgets.even_note(even_note(views.near_even(weights[group.start : group.stop], mask), num_tokens, settings,
                                masked=True))  # fmt: skip
    widgets.explain_cell()


@steps.add("Several heads", attention.MultiHeadAttentionWrapper)
def several_heads():
    st.markdown(notes.several_heads_text(num_heads, trained=is_trained))
    explain = head_weights(data.wrapper_scores, data.wrapper_keep, group, stacked=False)
    heads_grid(data.wrapper_weights, f"{weights_name} of each head", "wrapper-heads", explain)


@steps.add("One head", attention.CausalAttention.steps)
def one_head():
    if num_heads > 1:
        names = (lambda k: f"head {k + 1}") if num_heads <= 8 else (lambda k: str(k + 1))
        head_control("Head to inspect", "head", range(num_heads), 1, names)
    st.markdown(notes.one_head_text(head, num_tokens, d_out))
    left, right = st.columns([3, 2])
    with left:
        options = dict(title=f"head {head + 1}: {weights_name}", value_name="attention weight", masked=mask)
        explain = head_weights(data.wrapper_scores, data.wrapper_keep, range(head, head + 1), stacked=False)
        options.update(kind="weights", explain=explain, style=widgets.style(share=0.59))  # st.columns([3, 2])
        widgets.draw(figures.heatmap, "head-weights", data.wrapper_weights[head], pieces, pieces, **options)
        gap = views.near_even(data.wrapper_weights[head], mask)
        widgets.even_note(even_note(gap, num_tokens, settings, masked=True))
    with right:
        context, title, cols = data.wrapper_head_context[head], f"head {head + 1}: context_vec", notes.labels(d_out)
        code, notation = "context_vec = dropped_weights @ values", Notation("context_vec", right="v")
        values = data.wrapper_values[head]
        explain = cells.context(data.wrapper_weights[head], values, pieces, cols, code=code, notation=notation)
        shown = dict(title=title, explain=explain, style=widgets.style(share=0.39))
        widgets.token_vectors("head-context", context, pieces, cols, **shown)
    widgets.explain_cell()
    sizes = (settings.effective_d_in, settings.context_length, settings.dropout)
    widgets.ask(questions.context_size(num_heads, d_out, data.wrapper_output.shape[1], *sizes), settings)  # next: cat


@steps.add("Concatenate", attention.MultiHeadAttentionWrapper.forward)
def concatenate():
    output = data.wrapper_output
    shown = range(num_heads) if num_tokens * num_heads * d_out <= notes.GRID_CELLS else group
    st.markdown(notes.concatenate_text(num_heads, num_tokens, d_out, first_values(output), trained=is_trained))
    widgets.book_caption(settings, "wrapper")
    part = f" (heads {shown.start + 1}–{shown.stop} of {num_heads})" if len(shown) < num_heads else ""
    z = output[:, shown.start * d_out : shown.stop * d_out]
    title = f"context_vecs, shape ({num_tokens}, {num_heads * d_out}){part}"
    cols = notes.labels(d_out, shown)
    code = "return torch.cat([head(x) for head in self.heads], dim=-1)"  # the wrapper's merge
    options = dict(first=shown.start * d_out, code=code, notation=Notation("context_vec"))
    merged = cells.merged(data.wrapper_weights, data.wrapper_values, pieces, cols, **options)
    widgets.token_vectors("wrapper-output", z, pieces, cols, title=title, explain=merged)


@steps.add("Split into heads", attention.MultiHeadAttention.steps)
def split_into_heads():
    st.markdown(notes.split_text(mha_d_out, num_heads, head_dim))
    rows = [(row.line, row.names, str(row.shape)) for row in data.shape_rows]
    widgets.table(pd.DataFrame(rows, columns=["line", "shape", "here"]), hide_index=True, width="stretch")


@steps.add("All heads at once", attention.MultiHeadAttention.steps, attention.heads_product)
def all_heads_at_once():
    st.markdown(notes.all_heads_text(data.efficient_weights.shape, head_dim, d_out, trained=is_trained))
    explain = head_weights(data.efficient_scores, data.efficient_keep, group, stacked=True)
    heads_grid(data.efficient_weights, f"{weights_name} of each head", "efficient-heads", explain)
    with st.expander("Section 3.6.2's check: one batched matmul equals each head's own product"):
        check = views.heads_product_view()
        st.markdown(notes.heads_product_text(check))
        st.code(notes.heads_product_code(check), language="python", wrap_lines=True)


@steps.add("Merge, out_proj", attention.MultiHeadAttention.steps)
def merge_and_out_proj():
    context, output = data.efficient_context, data.efficient_output
    width = data.wrapper_output.shape[1]
    st.markdown(notes.merge_text(mha_d_out, num_heads, head_dim, width, first_values(output)))
    widgets.book_caption(settings, "multihead")
    left, right = st.columns(2)
    with left:
        cols = notes.labels(head_dim, range(num_heads))
        title = f"heads merged ({num_tokens}, {mha_d_out})"
        code, notation = "context_vec = context_vec.contiguous().view(", Notation("context_vec")  # the heads merged
        merged = cells.merged(data.efficient_weights, data.efficient_values, pieces, cols, code=code, notation=notation)
        widgets.token_vectors("efficient-context", context, pieces, cols, title=title, explain=merged)
    with right:
        title = f"out_proj → output ({num_tokens}, {mha_d_out})"
        out, heads = notes.labels(mha_d_out), data.efficient_values.shape[0]
        code, notation = "output = self.out_proj(context_vec)", Notation("output")
        mixed = cells.out_proj(context, data.out_weight, data.out_bias, pieces, out, num_heads=heads, code=code,
                               notation=notation)  # fmt: skip
        widgets.token_vectors("efficient-output", output, pieces, out, title=title, explain=mixed)
    widgets.explain_cell()
    st.markdown(notes.GPT_TEXT)


@steps.add("Same weight matrices, same output", attention.multihead_from_wrapper)
def same_output():
    difference = data.wrapper_vs_efficient_max_difference
    st.markdown(notes.same_output_text(d_out, head_dim, data.shared_d_out, trained=is_trained))
    if difference is None:
        st.info(notes.skipped_text(data.shared_d_out, SHARED_D_OUT_LIMIT))
    else:
        wrapper_output, fused_output = data.agreement_outputs
        names = dict(reference_name="MultiHeadAttentionWrapper", other_name="MultiHeadAttention, wrapper's matrices")
        title = "Every output entry, wrapper against fused module"
        widgets.draw(figures.agreement, "wrapper-vs-fused", wrapper_output, fused_output, title=title, **names)
    if not is_trained:
        st.caption(notes.RANDOM_NOTE)


if is_trained:  # a model's weights: what its heads look at, and every layer's heads

    @steps.add("What each head looks at")
    def what_heads_look_at():
        widgets.show_summaries(settings)

    @steps.add("Every layer and head")
    def every_head():
        widgets.show_every_head(settings)


steps.show()
