"""Generate: a GPT continues the prompt token by token; the KV cache, its cost, and smaller caches."""

import numpy as np
import pandas as pd
import streamlit as st

import attention
from attention import figures
from attention.after_chapter.generation import MAX_NEW_TOKENS, choose_token
from attention.measuring.costs import cache_bytes_per_token, macs_per_new_token
from attention.prose import cells
from attention.prose.cells import Notation
from explorer import session, widgets
from explorer.page_text import generate as notes
from explorer.views import beyond as views

run = session.current_run()
settings = run.settings
st.title("Generate")
NEW, TEMPERATURE = session.GENERATE_NEW, session.GENERATE_TEMPERATURE
TOP_K, SEED = session.GENERATE_TOP_K, session.GENERATE_SEED
defaults = views.GenerationOptions()
options = views.GenerationOptions(
    max_new_tokens=session.whole_state(NEW, defaults.max_new_tokens),
    temperature=float(st.session_state.get(TEMPERATURE, 0.0)),
    top_k=st.session_state.get(TOP_K) or None,
    seed=int(st.session_state.get(SEED, defaults.seed)),
)
with st.popover(notes.settings_label(options), icon=":material/tune:", width="stretch"):
    left, middle, right, last = st.columns(4)
    left.number_input("New tokens", 1, MAX_NEW_TOKENS, help=notes.cap_help(views.MAX_PAGE_TOKENS),
                      **session.kept_widget(NEW, "w_gen_new", defaults.max_new_tokens))  # fmt: skip
    middle.slider("Temperature", 0.0, 2.0, step=0.1, help="0: greedy, always the likeliest token",
                  **session.kept_widget(TEMPERATURE, "w_gen_temperature", 0.0))  # fmt: skip
    kept = session.kept_widget(TOP_K, "w_gen_top_k", 0)
    right.selectbox("top-k", notes.TOP_K_CHOICES, format_func=notes.top_k_name, **kept)
    kept = session.kept_widget(SEED, "w_gen_seed", defaults.seed)
    last.number_input("Seed", 0, 2**31 - 1, help="draws the samples", **kept)
data = widgets.guard(views.generation, settings, options)
n_new, pieces, prompt_tokens = data.new_tokens, data.pieces, data.prompt_tokens
style = widgets.style()
steps = widgets.Steps("generate")


def picker(column, label: str, key: str, name: str, count: int) -> int:
    """An index (from 0) kept across steps and in the link as ``{name}_n`` (``kept_index``), chosen with a slider
    that counts from 1, as the link and the book do."""
    index, widget = session.kept_index(key, f"{name}_n", "generate", default=0, count=count), f"w_generate_{name}"
    if count > 1:
        st.session_state[widget] = index + 1
        update = lambda: st.session_state.update({key: st.session_state[widget] - 1})  # noqa: E731
        column.slider(label, 1, count, key=widget, on_change=update)
    return index


def chosen_token() -> tuple[int, int, int, int]:
    """The new token, layer and head picked above the chart (kept across steps and in the link as ``token_n``,
    ``gen_layer_n`` and ``head_n``), and its keys."""
    left, middle, right = st.columns([3, 1, 1])
    k = picker(left, "New token", session.GENERATE_TOKEN, "token", n_new)
    layer = picker(middle, "Layer", session.GENERATE_LAYER, "gen_layer", data.num_layers)
    head = picker(right, "Head", session.GENERATE_HEAD, "head", data.num_heads)
    return k, layer, head, prompt_tokens + k  # the keys the query of step k sees


@steps.add("Prompt and settings", attention.generate, choose_token)
def prompt_and_settings():
    st.markdown(notes.intro_text(data))
    st.markdown(notes.generated_markdown(data))
    st.caption(notes.PROMPT_CAPTION)


@steps.add("Token by token", attention.GPTWithCache.step)
def token_by_token():
    k, layer, head, seen = chosen_token()
    st.markdown(notes.token_text(data, k, layer, head))
    rows = data.attn_rows[: k + 1, layer, head, :seen]
    row_labels = [pieces[prompt_tokens + j - 1] for j in range(k + 1)]
    title = f"query rows, attn_weights (layer {layer + 1}, head {head + 1})"
    shown = dict(title=title, kind="weights", masked=np.isnan(rows), highlight_row=k, value_name="attention weight")
    code, notation = "attn_rows.append(steps.attn_weights[:, :, -1, :])", Notation("attn_weights")
    recorded = dict(layer=layer, head=head, first_query=prompt_tokens - 1, model=data.model_name)
    explain = cells.recorded_weights(rows, row_labels, pieces[:seen], **recorded, code=code, notation=notation)
    weights = widgets.panel("query-rows", figures.heatmap, rows, row_labels, pieces[:seen], explain=explain, **shown)
    names = data.top_pieces[k]
    chosen = data.ids[seen]
    highlight = list(data.top_ids[k]).index(chosen) if chosen in data.top_ids[k] else None
    title = f"The 10 likeliest next tokens; picked “{figures.visible_token(pieces[seen])}”"
    probs = widgets.panel("top-10", figures.bars, {"probability": data.top_probs[k]}, names, title=title,
                          highlight=highlight, value_name="probability", decimals=3)  # fmt: skip
    widgets.side_by_side(weights, probs)


@steps.add("The KV cache grows", attention.CachedMultiHeadAttention.steps, attention.KVCache)
def kv_cache():
    k, layer, head, seen = chosen_token()
    check = widgets.guard(views.cache_check, settings, options)  # computed for this step alone
    st.markdown(notes.cache_text(data, check, k))
    keys, again = check.cache_keys[layer, head, :seen], check.recomputed_keys[layer, head, :seen]
    span = figures.shared_range(keys, again, kind="signed")
    dims = [f"dim {d}" for d in range(data.head_dim)]
    shown = dict(kind="signed", value_range=span, row_title="token", col_title=figures.DIMENSION, col_tokens=False)
    shown["style"] = widgets.style(at_most=360)  # both fit 1280×720 under the text
    made = (check.cache_keys, check.recomputed_keys, layer, head, pieces[:seen])
    code = "keys = self.W_key(x)"  # CachedMultiHeadAttention.steps: every key, cached or recomputed
    explain = cells.cached_keys(*made, shown="cached", code=code, notation=Notation("cached keys"))
    title = f"cached keys, layer {layer + 1}, head {head + 1}: {seen} rows"
    grown = widgets.panel("cached-keys", figures.heatmap, keys, pieces[:seen], dims, title=title, explain=explain,
                          **shown)  # fmt: skip
    explain = cells.cached_keys(*made, shown="recomputed", code=code, notation=Notation("recomputed keys"))
    title = f"keys recomputed from the whole text: {seen} rows"
    full = widgets.panel("recomputed-keys", figures.heatmap, again, pieces[:seen], dims, title=title, explain=explain,
                         **shown)  # fmt: skip
    widgets.side_by_side(grown, full)
    st.markdown(notes.WHY_EQUAL)


@steps.add("Cost per new token", macs_per_new_token, attention.measure_token_times)
def cost_per_token():
    st.markdown(notes.cost_text(data))
    every = np.log(np.asarray(data.text_lengths, dtype=float))
    wanted = np.linspace(every[0], every[-1], 6)  # six lengths evenly apart on the log axis: their ticks never meet
    shown = np.unique([int(np.abs(every - w).argmin()) for w in wanted])
    lengths = [data.text_lengths[i] for i in shown]
    series = {"with the cache": np.take(data.macs_with, shown), "without the cache": np.take(data.macs_without, shown)}
    axes = dict(x_title="tokens in the text", y_title="multiply-adds", measured=True, style=style)
    title = "Multiply-adds per new token (log axes)"
    macs = figures.lines(lengths, series, title=title, **axes)
    left, right = st.columns(2)
    with left:
        widgets.chart(macs, "macs-per-token", key="macs-per-token")
    with right:
        if st.button("Time one new token", icon=":material/timer:", type="primary", key="generate_time"):
            with widgets.progress("Timing…") as report:
                st.session_state[session.GENERATE_TIMES] = widgets.guard(views.timed, settings, on_progress=report)
        times = st.session_state.get(session.GENERATE_TIMES)
        if times is None:
            st.info("Press **Time one new token** to measure both ways on this server.", icon=":material/timer:")
        else:
            st.markdown(notes.times_text(times))
            series = {"with the cache": np.array(times.with_cache_s) * 1e3,
                      "without the cache": np.array(times.without_cache_s) * 1e3}  # fmt: skip
            axes["y_title"] = "ms"
            drawn = figures.lines(list(times.lengths), series, title="Measured time per new token", **axes)
            widgets.chart(drawn, "time-per-token", key="time-per-token")


@steps.add("Smaller caches", attention.GroupedQueryAttention.steps, cache_bytes_per_token)
def smaller_caches():
    st.markdown(notes.MEMORY_TEXT + "\n\n" + notes.FORMULA)
    widgets.table(pd.DataFrame(views.cache_rows(1024), columns=notes.CACHE_COLUMNS).round(2), hide_index=True)


@steps.add("Sliding window", attention.sliding_window_mask)
def sliding_window():
    num_tokens = prompt_tokens
    kept = session.kept_widget(session.GENERATE_WINDOW, "w_gen_window", min(3, num_tokens))
    slider, text = st.columns([1, 3])  # side by side, so that the masks fit 1280×720 under them
    window = min(slider.slider("Window (tokens)", 1, max(num_tokens, 2), **kept), num_tokens)
    text.markdown(notes.window_text(window, num_tokens))
    causal, sliding = views.window_masks(num_tokens, window)
    mask = dict(kind="mask", value_name="mask", decimals=0, meaning="1: masked", legend_names=notes.WINDOW_LEGEND)
    prompt = pieces[:num_tokens]
    title = f"sliding window of {window}"
    rule = cells.window_mask(num_tokens, None, prompt, code="future = key_pos > query_pos",
                             notation=Notation("causal mask"))  # fmt: skip
    plain = widgets.panel("causal-mask", figures.heatmap, causal.astype(float), prompt, prompt, title="causal mask",
                          explain=rule, **mask)  # fmt: skip
    rule = cells.window_mask(num_tokens, window, prompt, code="return future | (key_pos <= query_pos - window)",
                             notation=Notation(title))  # fmt: skip
    windowed = widgets.panel("window-mask", figures.heatmap, sliding.astype(float), prompt, prompt, title=title,
                             explain=rule, **mask)  # fmt: skip
    widgets.side_by_side(plain, windowed)


steps.show()
