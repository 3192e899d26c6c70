"""The Generate page's step prose, quoting this generation (``views.beyond.GenerationView``) or timing."""

from __future__ import annotations

from attention.prose import literal, sentence_start
from explorer.page_text.questions import quote as quoted_token

WINDOW_LEGEND = {
    "False (0): visible": "0: visible",
    "True (1): masked, a future key": "1: masked (future, or too far back)",
}
PROMPT_CAPTION = "The prompt is the sidebar's sentence (the book's by default); ↵ marks a new line."
TOP_K_CHOICES = (0, 5, 10, 20, 50, 200)
CACHE_COLUMNS = [
    *("model", "attention", "layers", "query heads", "key/value heads", "head_dim"),
    *("stored as", "bytes per token", "MiB for 1,024 tokens"),
]
FORMULA = "`bytes per token = 2 × num_layers × num_kv_heads × head_dim × bytes per number`"


def top_k_name(k: int) -> str:
    return f"top {k}" if k else "every token"


def cap_help(cap: int) -> str:
    return (
        f"This server generates at most {cap} new tokens at a time; the prompt and they must fit the model's context."
    )


def how_chosen(options) -> str:
    """The sampling settings in words."""
    if options.temperature == 0:
        top = f" (of the top {options.top_k})" if options.top_k else ""
        return "chosen greedily: always the likeliest token" + top
    kept = f"the {options.top_k} likeliest tokens" if options.top_k else "every token"
    return f"sampled from {kept} at temperature {options.temperature:g}, seed {options.seed}"


def settings_label(options) -> str:
    """The one-line summary on the settings button."""
    choice = "greedy" if options.temperature == 0 else f"temperature {options.temperature:g}"
    top = f" · top-k {options.top_k}" if options.top_k else ""
    return f"Generation: {options.max_new_tokens} new tokens · {choice}{top} · seed {options.seed}"


def intro_text(view) -> str:
    return (
        f"**{sentence_start(view.model_name)}** ({view.num_layers} layers of `MultiHeadAttention` with "
        f"{view.num_heads} heads, context_length {view.context_length}) continues the prompt's "
        f"**{view.prompt_tokens}** tokens with **{view.new_tokens}** new ones. They are {how_chosen(view.options)}. "
        "Each step turns the last token's logits (one raw score per token of the vocabulary) into probabilities "
        "with a softmax and appends the chosen token. Chapter 4's `generate_text_simple` picks greedily; "
        "chapter 5's `generate` adds temperature and top-k. The next steps look inside."
    )


def generated_markdown(view) -> str:
    """The prompt and the new tokens, each shown as typed (no Markdown made from them; ↵ marks a new line)."""

    def shown(text: str) -> str:
        return literal(text.replace("\r", "").replace("\n", "↵ ").strip()) or "(only spaces)"

    prompt, new = "".join(view.pieces[: view.prompt_tokens]), "".join(view.pieces[view.prompt_tokens :])
    return f"**Prompt:** {shown(prompt)}\n\n**Continued:** … {shown(new)}"


def token_text(view, k: int, layer: int, head: int) -> str:
    """Step ``k`` (from 0): the query that chose new token k, where it looked, and what it chose."""
    query_at = view.prompt_tokens + k - 1
    row = view.attn_rows[k, layer, head, : query_at + 1]
    most = int(row.argmax())
    chosen = view.ids[view.prompt_tokens + k]
    picked = f"picked {quoted_token(view.pieces[view.prompt_tokens + k])}"
    if chosen in view.top_ids[k]:
        place = list(view.top_ids[k]).index(chosen)
        picked += f", number {place + 1} of the ten, probability {view.top_probs[k][place]:.3f}"
    else:
        picked += ", a token outside the ten likeliest (sampling can pick any token it kept)"
    return (
        f"New token {k + 1} of {view.new_tokens}. The query of the last token so far, "
        f"{quoted_token(view.pieces[query_at])} (token {query_at + 1}), scores every key up to itself: "
        f"{query_at + 1} keys. In layer {layer + 1}, head {head + 1}, its largest weight, **{row[most]:.3f}**, is on "
        f"{quoted_token(view.pieces[most])} (token {most + 1}). The model {picked}."
    )


def cache_text(view, check, k: int) -> str:
    """What the cache holds at step ``k`` and how it compares with recomputing everything (``check``)."""
    tokens, size = view.cache_tokens[k], view.cache_bytes[k]
    same = "the same" if check.same_tokens else "**different**"
    return (
        f"After step {k + 1} the cache holds the keys and values of **{tokens}** tokens in each of "
        f"{view.num_layers} layers: {size:,} bytes. Each step adds one row to every layer's keys and values "
        f"(left). A full recomputation, the whole text read at once, gives the same keys (right): largest "
        f"|difference| {check.keys_max_difference:.1e} for keys and {check.values_max_difference:.1e} for values, "
        f"over every layer and head. Generating with and without the cache gave {same} {view.new_tokens} "
        f"tokens, and logits within {check.logits_max_difference:.1e}."
    )


WHY_EQUAL = (
    "Why are the cached rows still right? A token's key and value come from its own input row. That row is the "
    "output of the layers below, and the causal mask hid every later token from it there. So a new token "
    "changes no earlier row, and each step appends only the new token's key and value to the cache. Its query "
    "is used once, in that step, and dropped: no later step needs an earlier query."
)


def cost_text(view) -> str:
    first, last = view.text_lengths[0], view.text_lengths[-1]
    with_first, with_last = view.macs_with[0], view.macs_with[-1]
    without_first, without_last = view.macs_without[0], view.macs_without[-1]
    return (
        f"Multiply-adds of the matrix products for one new token, counted from the model's shape "
        f"(`macs_per_new_token`). With the cache only the newest token goes through the model: "
        f"{with_first:,} at {first} tokens, {with_last:,} at {last} ({with_last / with_first:.2f}×). Without it "
        f"all tokens go through again: {without_first:,} at {first}, {without_last:,} at {last} "
        f"({without_last / without_first:.1f}×), {without_last / with_last:.0f}× the cached step at {last} tokens."
    )


def times_text(times) -> str:
    first, last = times.lengths[0], times.lengths[-1]
    return (
        f"Measured here, side by side in one run (median of {times.repeats} rounds, {times.threads} thread(s), "
        f"load average {times.load_before[0]:.2f} before, {times.load_after[0]:.2f} after). From {first} to "
        f"{last} tokens, the time per new token grew {times.growth_with_cache:.2f}× with the cache and "
        f"{times.growth_without_cache:.2f}× without. A busy server makes single times noisy."
    )


MEMORY_TEXT = (
    "The cache keeps a key and a value for every token, in every layer, for every key/value head. Grouped-query "
    "attention (GQA, in Llama 3 and Qwen) lets several query heads share one key/value head; multi-query attention "
    "(MQA) shares one among all. The query heads stay; the cache is num_heads / num_kv_heads times smaller. "
    "`GroupedQueryAttention` with as many groups as heads is `MultiHeadAttention`. The GQA and MQA rows of GPT-2 small "
    "and the small GPT are what-ifs: both models use multi-head attention. Llama 3 8B really has 8 key/value heads."
)


def window_text(window: int, num_tokens: int) -> str:
    return (
        f"A sliding window (Mistral 7B, Gemma 2) also hides keys {window} or more tokens back: each token sees itself "
        f"and the {window - 1} before it, so a cache of the last {window} tokens would be enough. Here on the "
        f"prompt's {num_tokens} tokens, beside the causal mask; a window of {num_tokens} or more is the causal mask."
    )
