"""The Multi-head attention page's helpers: which heads are drawn together, column names, and the
step text that quotes this input's shapes."""

from __future__ import annotations

GRID_CELLS = 2**20  # heads are drawn together while their matrices hold at most this many cells


def head_group(head: int, num_heads: int, num_tokens: int) -> tuple[int, range]:
    """How many heads a grid draws at once (at most 4, fewer for long inputs) and the group ``head`` is in."""
    size = max(1, min(4, GRID_CELLS // num_tokens**2))
    start = head - head % size
    return size, range(start, min(num_heads, start + size))


def group_spans(num_heads: int, size: int) -> list[str]:
    """Each group of heads as a span of head numbers: "0–3", "4–7"."""
    return [f"{g}–{min(num_heads, g + size) - 1}" for g in range(0, num_heads, size)]


def head_titles(group: range, head: int, num_heads: int) -> list[str]:
    """Subplot titles for a group of heads; the inspected one says so."""
    return [f"head {k}" + (" (inspected)" if k == head and num_heads > 1 else "") for k in group]


def labels(dims: int, heads: range | None = None) -> list[str]:
    """Column names "dim j", or "head k · dim j" for heads side by side; short when there are many columns."""
    if heads is None:
        return [f"dim {j}" if dims <= 8 else str(j) for j in range(dims)]
    wide = len(heads) * dims > 8
    return [f"h{k}·{j}" if wide else f"head {k} · dim {j}" for k in heads for j in range(dims)]


def concatenate_text(num_heads: int, num_tokens: int, d_out: int, first_row: str) -> str:
    return (
        f"`torch.cat([head(x) for head in self.heads], dim=-1)`: each head's d_out = {d_out} columns side by side, "
        f"so the wrapper returns (b, num_tokens, num_heads · d_out) = (1, {num_tokens}, {num_heads * d_out}). "
        f"First row: {first_row}. Head 0 is built first after the seed, so its columns equal "
        "`CausalAttention`'s output (Batches page)."
    )


def split_text(mha_d_out: int, num_heads: int, head_dim: int) -> str:
    return (
        f"`MultiHeadAttention` projects **once** to d_out = {mha_d_out}, then splits: `view` cuts d_out into "
        f"num_heads = {num_heads} heads of head_dim = {head_dim}, `transpose` puts heads before tokens, and one "
        "batched matmul attends in every head at once. Each line of `steps` and the shape it made for this input "
        "(b = 1 sentence), recorded as it ran:"
    )


def all_heads_text(weights_shape: tuple[int, ...], head_dim: int, d_out: int) -> str:
    """Step 5: every head's weights from one batched matmul; ``weights_shape`` is (num_heads, T, T)."""
    return (
        f"`attn_weights` has shape (b, num_heads, num_tokens, num_tokens) = {(1, *weights_shape)}"
        f": every head's weights from one batched matmul. Each head compares queries and keys of head_dim = "
        f"{head_dim} numbers (the wrapper's heads: d_out = {d_out}) with other weights, so its pattern differs."
    )


def same_output_text(d_out: int, head_dim: int, shared_d_out: int) -> str:
    return (
        f"The two modules differ in shape and in weights: the wrapper's heads have d_out = {d_out} outputs each, "
        f"concatenated, while `MultiHeadAttention` splits its d_out into heads of head_dim = {head_dim} and mixes "
        "them with `out_proj`. Per head they compute the same thing. `multihead_from_wrapper` builds a "
        f"`MultiHeadAttention` with d_out = num_heads × the wrapper's d_out = {shared_d_out}: its fused "
        "`W_query`, `W_key`, `W_value` hold head i's matrices in rows i·d_out to (i+1)·d_out − 1, and its "
        "`out_proj` is the identity, since the wrapper only concatenates. Then both give the same output (eval mode)."
    )


def skipped_text(shared_d_out: int, limit: int) -> str:
    return (
        f"Skipped: the fused module would need d_out = {shared_d_out:,}, more than MultiHeadAttention "
        f"allows ({limit:,}). Lower d_out or num_heads to measure it."
    )
