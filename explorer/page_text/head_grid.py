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


SHORT_ABOVE = 6  # more heads than this side by side get the short labels ("P 0.62")


def head_label(previous: float, first: float, spread: float, *, short: bool = False) -> str:
    """A head's summary in a word and a number: "prev 0.62", "first 0.80", or else "spread 0.71";
    ``short``: the word's first letter ("P 0.62"), for narrow small multiples."""
    if previous >= MOSTLY and previous >= first:
        word, value = "prev", previous
    elif first >= MOSTLY:
        word, value = "first", first
    else:
        word, value = "spread", spread
    return f"{word[0].upper() if short else word} {value:.2f}"


def head_labels(summaries) -> tuple[list[list[str]], list[list[str]]]:
    """Each head's label and its hover text with all three numbers, layer by layer; ``summaries`` holds (L, h).
    More than ``SHORT_ABOVE`` heads get short labels."""
    short = summaries.previous_token.shape[-1] > SHORT_ABOVE
    labels, details = [], []
    for previous, first, spread in zip(
        summaries.previous_token, summaries.first_token, summaries.entropy_share, strict=True
    ):
        labels.append([head_label(*values, short=short) for values in zip(previous, first, spread, strict=True)])
        details.append(
            [f"prev {p:.2f} · first {f:.2f} · spread {s:.2f}" for p, f, s in zip(previous, first, spread, strict=True)]
        )
    return labels, details


def grid_title(num_layers: int, num_heads: int) -> str:
    return f"attn_weights: {num_layers} layers × {num_heads} heads"


def grid_text(model_name: str, num_layers: int, num_heads: int, shown: int, num_tokens: int) -> str:
    """What the grid shows, before it."""
    tokens, cut = f"its {shown} tokens", ""
    if shown < num_tokens:
        tokens = f"its first {shown} of {num_tokens} tokens"
        cut = " The tokens after them would change none of these weights: the causal mask hides them."
    return (
        f"Every head of every layer of {model_name} on {tokens}: {num_layers * num_heads} "
        f"{term('attention_weights', 'attention-weight')} matrices as small multiples (same-sized charts on "
        f"one 0–1 scale). Rows are layers, columns heads.{cut}"
    )


def label_text(num_heads: int, *, written: bool = True) -> str:
    """How to read a label, after the grid; ``written``: whether the labels are printed in the small multiples."""
    legend = (
        "P = most weight on the previous token, F = on the first token, S = spread: the rows' entropy ÷ that "
        "of even weights. "
        if num_heads > SHORT_ABOVE
        else ""
    )
    where = "Here the labels would cover the weights, so only the hover shows them. "
    if written:
        where = "On a phone only the hover shows them. " if num_heads > SHORT_ABOVE else ""
    return (
        f"{where}{legend}A label says **prev** or **first** when the token just before, or the first token, gets "
        f"at least {MOSTLY:.0%} of a row's weight on average (queries 2 to T). Otherwise it says **spread**: the "
        f"rows' {term('entropy', 'entropy')} as a share of spreading evenly (1 is even, 0 is one token)."
    )


def open_text(layer: int, head: int) -> str:
    """Above the keyboard route and the page links: what the chapter pages hold now."""
    return (
        f"Click anywhere in a small multiple, or pick it below, to open that layer and head on the chapter pages. "
        f"They hold **layer {layer}, head {head}** now (outlined)."
    )
