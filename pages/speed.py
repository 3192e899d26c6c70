"""Speed: the same attention computed seven ways, timed live at sizes you pick: what materializing T × T costs. The
default sizes are planned for this machine (``explorer.views.beyond.default_plan``); the words that depend on the
measurement are in ``explorer.page_text.speed``."""

import pandas as pd
import streamlit as st

import attention
from attention import figures
from attention.measuring import speed
from attention.prose.glossary import term
from explorer import session, widgets
from explorer.page_text import speed as words
from explorer.views import beyond as timing

T_CHOICES = (16, 32, 64, 128, 256, 512, 1024)
D_MODEL_CHOICES = (32, 64, 128, 256, 512, 768)
RESULT = session.SPEED_RESULT
REFERENCE = "MultiHeadAttention"  # the book's module: every ratio is against its time
FUSED = "F.scaled_dot_product_attention"
ONE_TENSOR = "one (b, num_heads, T, T) tensor, computed"

session.current_run()  # the sidebar's settings do not apply here; the sizes below do
st.title("Speed")
devices = timing.speed_devices()
NO_GPU = "No GPU on this server; CUDA results appear when one is present." if devices == ["cpu"] else ""
SIZES = {"speed_d": 64, "speed_h": 4, "speed_b": 1, "speed_repeats": 3}  # small d_model: T × T dominates early
plan = timing.default_plan(T_CHOICES, *SIZES.values())  # the T whose measurement fits this machine now
defaults = {"speed_T": list(plan.num_tokens), **SIZES}
for key, value in {**defaults, "speed_device": devices[-1]}.items():
    st.session_state.setdefault(key, value)
heads = [h for h in range(1, 13) if st.session_state["speed_d"] % h == 0]
if st.session_state["speed_h"] not in heads:
    st.session_state["speed_h"] = 4
choice = [st.session_state[key] for key in (*defaults, "speed_device")]  # T, d_model, num_heads, b, repeats, device
T_text = ", ".join(map(str, sorted(choice[0]))) or "(none)"
label = "Sizes: T = {} · d_model = {} · num_heads = {} · b = {} · {} rounds · {}".format(T_text, *choice[1:])
sizes_column, run = st.columns([4, 1.3], vertical_alignment="bottom")
with sizes_column.popover(label, icon=":material/tune:", width="stretch", key="speed_sizes"):
    st.multiselect("Sequence lengths T", T_CHOICES, key="speed_T")
    left, middle, right = st.columns(3)
    left.selectbox("d_model", D_MODEL_CHOICES, key="speed_d", help="d_in = d_out = d_model")
    middle.selectbox("num_heads", heads, key="speed_h", help="Each divides d_model")
    right.number_input("batch b", 1, 4, key="speed_b")
    left.number_input("repeats", 1, 5, key="speed_repeats", help="Timing rounds; the median call is shown")
    middle.selectbox("device", devices, key="speed_device")
    st.caption(NO_GPU)
st.caption(words.plan_words(plan))
if run.button("Run the comparison", icon=":material/play_arrow:", type="primary", disabled=not choice[0],
              key="speed_run", width="stretch"):  # fmt: skip
    with widgets.progress("Starting the measurement…") as report:
        sizes = (tuple(sorted(choice[0])), *choice[1:])
        st.session_state[RESULT] = widgets.guard(timing.speed_view, *sizes, on_progress=report)
data = st.session_state.get(RESULT)
steps = widgets.Steps("speed")


def ratio(name: str) -> float:
    """``name``'s time at the largest T as a multiple of MultiHeadAttention's."""
    return data.time_ms[name][-1] / data.time_ms[REFERENCE][-1]


def pace(name: str) -> str:
    return f"{words.times(ratio(name))} the time of `{REFERENCE}`"


def mib(name: str) -> str:
    return words.amount(data.peak_memory_mib[name][-1])


def chart(series: dict, title: str, y_title: str, name: str, dashed=()) -> None:
    options = dict(x_title="T (tokens)", y_title=y_title, dashed=dashed, measured=True, style=widgets.style())
    sizes = ", ".join(f"{k} = {v}" for k, v in data.sizes.items() if k != "repeats")  # "d_model = 256, …, b = 1"
    title = f"{title} · {data.device}, {sizes}"
    widgets.chart(figures.lines(list(data.num_tokens), series, title=title, **options), name, key=name)


def measurement_shown() -> bool:
    """The measurement's budget note; before any measurement, a prompt to run one instead (and False)."""
    if not data:
        st.info("Press **Run the comparison** to measure at the sizes above.", icon=":material/speed:")
        return False
    st.caption(timing.budget_note(data))
    return True


@steps.add("What we compare", *(impl.build for impl in attention.IMPLEMENTATIONS.values()))
def implementations():
    st.markdown(
        "Seven ways to run **the same** `MultiHeadAttention` parameters (seed 123, eval mode): each gives the same "
        "output, but they keep different tensors in memory. Pick the sizes above and press **Run the comparison**."
    )
    rows = [(name, impl.stage, impl.keeps) for name, impl in attention.IMPLEMENTATIONS.items()]
    table = pd.DataFrame(rows, columns=["implementation", "chapter stage", "keeps in memory at once"])
    widgets.table(table, hide_index=True, width="stretch")
    if data:
        worst = max(data.max_abs_difference.values())
        st.markdown(f"Measured: every output equals `{REFERENCE}`'s to within {worst:.1e} (largest |difference|).")
    st.caption(NO_GPU)


@steps.add("Time against T")
def time():
    if not measurement_shown():
        return
    T, time_ms, growth = list(data.num_tokens), data.time_ms, data.time_growth
    fastest = min(time_ms, key=lambda n: time_ms[n][-1])
    rounds, d_model = min(data.rounds, default=1), data.sizes["d_model"]
    st.markdown(
        f"The median time of one call. At T = {T[-1]}, `{fastest}` is fastest ({time_ms[fastest][-1]:.3g} ms), "
        f"`{REFERENCE}` takes {time_ms[REFERENCE][-1]:.3g} ms. "
        + words.growth_words({name: growth[name] for name in (REFERENCE, "fast_multihead")}, rounds, d_model)
        + f" {words.load_words(data.load, data.threads)} Which kernel `{FUSED}` runs depends on the backend PyTorch "
        "picks for this device and these sizes. Some skip the blocks above the diagonal; a plain one computes every "
        "q·k score. Flat stretches are fixed costs per call (Python, launching operations). "
        + term("log_log", "Both axes are logarithmic")
        + ": each step along one multiplies."
    )
    chart(data.time_ms, "Median time of one call", "ms", "speed-time")
    widgets.show_code(speed.measure, speed.call_seconds, speed.time_growth)


@steps.add("Memory against T")
def memory():
    if not measurement_shown():
        return
    T, one = list(data.num_tokens), data.one_weights_mib
    st.markdown(
        "The peak memory of one call: its intermediates and output. Dashed: one (b, num_heads, T, T) float32 tensor, "
        f"b·num_heads·T²·4 bytes, computed, not measured ({words.amount(one[-1])} at T = {T[-1]}). Lines parallel to "
        f"it grow as T²; lines half as steep grow as T ({term('log_log', 'both axes are logarithmic')})."
    )
    series = {**data.peak_memory_mib, ONE_TENSOR: data.one_weights_mib}
    chart(series, "Peak memory of one call", "MiB", "speed-memory", dashed=[ONE_TENSOR])
    widgets.show_code(speed.peak_memory_bytes, speed.expected_attention_bytes)


@steps.add("Why")
def why():
    if not measurement_shown():
        return
    T, one, memory = list(data.num_tokens), data.one_weights_mib, data.peak_memory_mib
    shape = (T[-1], data.sizes["d_model"], data.sizes["num_heads"])
    fused = (memory[FUSED][-1], memory["fast_multihead"][-1])
    st.markdown(
        words.trace_words(memory["trace"][-1], one[-1], *shape)
        + f" at T = {T[-1]}: it keeps the book's masked scores and the attention weights, and takes {pace('trace')}. "
        f"`{REFERENCE}`, the book's code, makes the same two plus the scaled scores, a third, and drops them when it "
        f"returns: {mib(REFERENCE)}.{words.memory_growth_words(data.memory_growth[REFERENCE])} "
        f"`nn.MultiheadAttention` makes the scores and returns every head's attention weights: "
        f"{mib('nn.MultiheadAttention')}, {pace('nn.MultiheadAttention')}. The wrapper holds one head's (b, T, T) "
        f"tensors at a time ({mib('MultiHeadAttentionWrapper')}) but runs {data.sizes['num_heads']} smaller products "
        f"one after another: {pace('MultiHeadAttentionWrapper')}. `{FUSED}` and `fast_multihead` use one "
        f"{term('fused_kernel')}: a single operation for scores, softmax and values, taking "
        f"{words.times(ratio(FUSED))} and {words.times(ratio('fast_multihead'))} the time of `{REFERENCE}`. "
        + words.kept_words(fused, one[-1], *shape)
    )
    rows = [(n, data.time_ms[n][-1], ratio(n), memory[n][-1], memory[n][-1] / one[-1]) for n in data.time_ms]
    columns = ["implementation", f"ms at T = {T[-1]}", f"× {REFERENCE}", "peak MiB", "× one attn_weights tensor"]
    table = pd.DataFrame(rows, columns=columns).set_index("implementation").map(words.number)  # no ratio shows 0
    widgets.table(table.reset_index(), hide_index=True, width="stretch")
    widgets.show_code(attention.MultiHeadAttention.steps, attention.fast_multihead)


steps.show()
