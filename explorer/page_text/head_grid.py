"""The words of Multi-head attention's "Every layer and head" step: the grid's title, its labels (a head's
summary in a word and a number), the text around it, and why it needs a model's weights."""

from __future__ import annotations

from explorer.page_text.glossary import term

MOSTLY = 0.5  # a head is labelled "prev" or "first" when that token gets at least this share on average
LINK_PAGES = (  # (page script, its title): the chapter pages that show one head of the layer
    ("pages/qkv.py", "Q, K, V & scaling"),
    ("pages/causal_mask.py", "Causal mask"),
    ("pages/dropout.py", "Dropout"),
)


def head_label(previous: float, first: float, spread: float) -> str:
    """A head's summary in a word and a number: "prev 0.62", "first 0.80", or else "spread 0.71"."""
    if previous >= MOSTLY and previous >= first:
        return f"prev {previous:.2f}"
    if first >= MOSTLY:
        return f"first {first:.2f}"
    return f"spread {spread:.2f}"


def head_labels(summaries) -> tuple[list[list[str]], list[list[str]]]:
    """Each head's label and its hover text with all three numbers, layer by layer; ``summaries`` holds (L, h)."""
    labels, details = [], []
    for previous, first, spread in zip(
        summaries.previous_token, summaries.first_token, summaries.entropy_share, strict=True
    ):
        labels.append([head_label(*values) for values in zip(previous, first, spread, strict=True)])
        details.append(
            [f"prev {p:.2f} · first {f:.2f} · spread {s:.2f}" for p, f, s in zip(previous, first, spread, strict=True)]
        )
    return labels, details


def grid_title(num_layers: int, num_heads: int, shown: int) -> str:
    return f"attn_weights of all {num_layers} layers × {num_heads} heads, {shown} tokens: rows are layers"


def grid_text(model_name: str, num_layers: int, num_heads: int, shown: int, num_tokens: int) -> str:
    """What the grid shows, before it."""
    cut = ""
    if shown < num_tokens:
        cut = (
            f" It shows the first {shown} of the {num_tokens} tokens; the causal mask means later tokens do not "
            "change these weights."
        )
    return (
        f"Every head of every layer of {model_name} on this sentence: {num_layers * num_heads} "
        f"{term('attention_weights', 'attention-weight')} matrices as small multiples, same-sized charts on one "
        f"0–1 scale, so the eye can compare them. Each row is a layer, each column a head.{cut}"
    )


def label_text() -> str:
    """How to read a label, after the grid."""
    return (
        f"A label says **prev** or **first** when the token just before, or the first token, gets at least "
        f"{MOSTLY:.0%} of a row's weight on average (queries 2 to T). Otherwise it says **spread**: the rows' "
        f"{term('entropy')} as a share of spreading evenly (1 is even, 0 is one token)."
    )


def open_text(layer: int, head: int) -> str:
    """Above the keyboard route and the page links: what the chapter pages hold now."""
    return (
        f"Click a small multiple, or pick it below, to open that layer and head on the chapter pages. They hold "
        f"**layer {layer}, head {head}** now (outlined)."
    )
