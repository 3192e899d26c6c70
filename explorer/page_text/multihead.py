"""The Multi-head attention page's helpers: which heads are drawn together, column names, and the
step text that quotes this input's shapes."""

from __future__ import annotations

from attention.prose.glossary import term

GRID_CELLS = 2**20  # heads are drawn together while their matrices hold at most this many cells


def head_group(head: int, num_heads: int, num_tokens: int) -> tuple[int, range]:
    """How many heads a grid draws at once (at most 4, fewer for long inputs) and the group ``head`` is in."""
    size = max(1, min(4, GRID_CELLS // num_tokens**2))
    start = head - head % size
    return size, range(start, min(num_heads, start + size))


def group_spans(num_heads: int, size: int) -> list[str]:
    """Each group of heads as a span of head numbers, counted from 1: "1–4", "5–8"."""
    return [f"{g + 1}–{min(num_heads, g + size)}" for g in range(0, num_heads, size)]


def head_titles(group: range, head: int, num_heads: int) -> list[str]:
    """Subplot titles for a group of heads, counted from 1 (head 1 is ``heads[0]``); the inspected one says so."""
    return [f"head {k + 1}" + (" (inspected)" if k == head and num_heads > 1 else "") for k in group]


def labels(dims: int, heads: range | None = None) -> list[str]:
    """Column names "dim j", or "head k · dim j" for heads side by side (heads from 1); short for many columns."""
    if heads is None:
        return [f"dim {j}" if dims <= 8 else str(j) for j in range(dims)]
    wide = len(heads) * dims > 8
    return [f"h{k + 1}·{j}" if wide else f"head {k + 1} · dim {j}" for k in heads for j in range(dims)]


def several_heads_text(num_heads: int, *, trained: bool = False) -> str:
    """Step 1: what the wrapper runs, and why several heads; ``trained``: the heads hold a trained layer's."""
    built = "each holding one head's slice of the trained layer" if trained else "built one after another from the seed"
    return (
        f"`MultiHeadAttentionWrapper` runs **{num_heads}** `CausalAttention` heads side by side. Each has its own "
        f"{term('weight_matrices', 'trainable weight matrices')} `W_query`, `W_key`, `W_value`, {built}. So each "
        "head projects the tokens differently and can attend to a different kind of relation between them (the "
        "book: different representation subspaces)."
    )


def one_head_text(head: int, num_tokens: int, d_out: int) -> str:
    """Step 2: one head is an ordinary ``CausalAttention``; ``head`` is its index in ``heads``."""
    return (
        f"Head {head + 1} (`heads[{head}]` in code, which counts from 0) is an ordinary `CausalAttention`: its "
        f"{term('attention_weights')} times its own values give its own {term('context_vector', 'context vectors')}, "
        f"shape (num_tokens, d_out) = ({num_tokens}, {d_out})."
    )


def concatenate_text(num_heads: int, num_tokens: int, d_out: int, first_row: str, *, trained: bool = False) -> str:
    last = (
        "With trained weight matrices the Batches page holds the sidebar's head; its columns here are that head's."
        if trained
        else "Head 1 is built first after the seed, so its columns equal `CausalAttention`'s output (Batches page)."
    )
    return (
        f"`torch.cat([head(x) for head in self.heads], dim=-1)`: each head's d_out = {d_out} columns side by side, "
        f"so the wrapper returns (b, num_tokens, num_heads · d_out) = (1, {num_tokens}, {num_heads * d_out}) for "
        f"one sentence. The book's batch holds two copies of its 6 tokens, and its 2 heads have d_out = 2 each, so "
        f"it prints torch.Size([2, 6, 4]). First row: {first_row}. " + last
    )


def split_text(mha_d_out: int, num_heads: int, head_dim: int) -> str:
    return (
        f"`MultiHeadAttention` projects **once** to d_out = {mha_d_out}, then splits: `view` cuts d_out into "
        f"{term('num_heads')} = {num_heads} heads of {term('head_dim')} = d_out // num_heads = {head_dim}. "
        f"{term('transpose', '`transpose(1, 2)`')} swaps only the token and head dimensions, putting heads before "
        "tokens; `.T` would reverse all four, batch included. Then one batched matmul attends in every head at once. "
        "Each line of `steps` and the shape it made for this input (b = 1 sentence), recorded as it ran:"
    )


def all_heads_text(weights_shape: tuple[int, ...], head_dim: int, d_out: int, *, trained: bool = False) -> str:
    """Step 5: every head's weights from one batched matmul; ``weights_shape`` is (num_heads, T, T)."""
    compared = (
        "Both modules hold the same trained layer here, so these patterns are the wrapper's heads' too."
        if trained
        else f"The wrapper's heads have d_out = {d_out} each and other weight matrices, so these patterns differ from "
        "its heads'."
    )
    return (
        f"`attn_weights` has shape (b, num_heads, num_tokens, num_tokens) = {(1, *weights_shape)}: every head's "
        f"weights from one batched matmul. Here {term('d_k')} = `keys.shape[-1]` is head_dim, so the scores are "
        f"divided by √head_dim = √{head_dim}. " + compared
    )


def merge_text(mha_d_out: int, num_heads: int, head_dim: int, wrapper_width: int, first_row: str) -> str:
    """Step 6: the heads merged back, then ``out_proj``."""
    return (
        "`transpose(1, 2)` puts tokens before heads again. `view` needs the numbers in memory in that order, and a "
        f"transpose only changes how memory is read, so {term('contiguous', '`contiguous()`')} copies them first. Then "
        f"`view` lays the heads side by side: num_heads × head_dim = {num_heads} × {head_dim} = d_out = {mha_d_out} "
        f"columns (the wrapper's concatenation has {wrapper_width}). {term('out_proj')}, a d_out × d_out linear layer, "
        f"mixes the heads. First row: {first_row}."
    )


GPT_TEXT = (  # step 6, after the numbers: the real sizes, and where this module goes next
    "This module is the attention layer that chapter 4's GPT stacks, 12 times in GPT-2 small. There num_heads "
    "= 12 and d_in = d_out = 768, so head_dim = 64, and context_length = 1,024."
)


def same_output_text(d_out: int, head_dim: int, shared_d_out: int, *, trained: bool = False) -> str:
    differ = (
        f"The two modules differ in shape and in weight matrices: the wrapper's heads have d_out = {d_out} each and "
        f"divide their scores by √{d_out}. `MultiHeadAttention`'s heads have head_dim = {head_dim} and divide by "
        f"√{head_dim}, and `out_proj` mixes them."
    )
    if trained:
        differ = (
            f"Here both modules hold the trained layer's own weight matrices, {head_dim} columns a head, divided by "
            f"√{head_dim}; `MultiHeadAttention` also mixes its heads with `out_proj`."
        )
    elif d_out == head_dim:
        differ = (
            f"Here both modules' heads have {d_out} columns and divide by √{d_out}, but their weight matrices differ, "
            "and `MultiHeadAttention` mixes its heads with `out_proj`."
        )
    return (
        differ + " `multihead_from_wrapper` builds a `MultiHeadAttention` with d_out = num_heads × the wrapper's "
        f"d_out = {shared_d_out}, so head_dim is the wrapper's d_out. Its `W_query`, `W_key`, `W_value` stack the "
        "heads' matrices one under another, and its `out_proj` is the identity, since the wrapper only "
        "concatenates. Then both give the same output (eval mode)."
    )


def skipped_text(shared_d_out: int, limit: int) -> str:
    return (
        f"Skipped: the fused module would need d_out = {shared_d_out:,}, more than MultiHeadAttention "
        f"allows ({limit:,}). Lower d_out or num_heads to measure it."
    )


RANDOM_NOTE = (
    "With trained weight matrices (sidebar), two more steps show what each head of a layer looks at and every "
    "layer and head at a glance. The chapter's random weight matrices are one seeded layer that learned "
    "nothing: no layers to compare."
)


HEAD_NAMES = ("first_head", "second_head", "third_head", "fourth_head")  # the book's names, section 3.6.2


def _matrix(rows) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{v:.4f}" for v in row) + "]" for row in rows) + "]"


def heads_product_text(check) -> str:
    """Step 5's note on section 3.6.2's check (``views.chapter.HeadsProductView``): what it multiplies, the result."""
    b, num_heads, num_tokens, head_dim = check.a.shape
    return (
        "Section 3.6.2 checks that one batched matmul equals each head's own product. Its tensor `a` has shape "
        f"(b, num_heads, num_tokens, head_dim) = ({b}, {num_heads}, {num_tokens}, {head_dim}). `a @ a.transpose(2, "
        "3)` multiplies the last two dimensions for every (item, head) pair at once. Each head's `head @ head.T` "
        f"gives the same numbers: max |difference| = {check.max_difference:.3g}. So one `queries @ "
        "keys.transpose(2, 3)` gives every head's scores."
    )


def heads_product_code(check) -> str:
    """The check as the book runs it, the package's numbers as comments: the batched product, then each head's."""
    lines = [f"print(a @ a.transpose(2, 3))  # shape {tuple(check.batched.shape)}: head 1, then head 2"]
    lines += [f"# {_matrix(product)}" for product in check.batched[0]]
    for h, product in enumerate(check.per_head[0][: len(HEAD_NAMES)]):
        name = HEAD_NAMES[h]
        lines += [f"{name} = a[0, {h}, :, :]", f"print({name} @ {name}.T)", f"# {_matrix(product)}"]
    return "\n".join(lines)
