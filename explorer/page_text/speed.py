"""The Speed page's step prose: each sentence quotes this measurement (a ``timing.SpeedView``)."""

from __future__ import annotations

from .glossary import term

REFERENCE = "MultiHeadAttention"  # the book's module: every ratio is against its time
FUSED = "F.scaled_dot_product_attention"


def ratio(data, name: str) -> float:
    """``name``'s time at the largest T as a multiple of MultiHeadAttention's."""
    return data.time_ms[name][-1] / data.time_ms[REFERENCE][-1]


def pace(data, name: str) -> str:
    return f"{ratio(data, name):.1f}× the time of `{REFERENCE}`"


def amount(value_mib: float) -> str:
    return f"{value_mib:.1f} MiB" if value_mib >= 1 else f"{value_mib * 1024:.0f} KiB"


def mib(data, name: str) -> str:
    return amount(data.peak_memory_mib[name][-1])


def sizes_note(data) -> str:
    """The sizes measured, for chart titles: "d_model = 256, num_heads = 4, b = 1"."""
    return ", ".join(f"{k} = {v}" for k, v in data.sizes.items() if k != "repeats")


def time_text(data) -> str:
    T, time_ms, k = list(data.num_tokens), data.time_ms, data.time_exponent
    fastest, span = min(time_ms, key=lambda n: time_ms[n][-1]), T[-3:]
    growth = (
        f" From T = {span[0]} to {span[-1]} the time of `{REFERENCE}` grew as $T^{{{k[REFERENCE]:.1f}}}$, that of "
        f"`fast_multihead` as $T^{{{k['fast_multihead']:.1f}}}$. Which kernel `{FUSED}` runs depends on the backend "
        "PyTorch picks for this device and these sizes. Some skip the blocks above the diagonal; a plain one "
        "computes every q·k score."
    )
    return (
        f"The median time of one call. At T = {T[-1]}, `{fastest}` is fastest ({time_ms[fastest][-1]:.3g} ms), "
        f"`{REFERENCE}` takes {time_ms[REFERENCE][-1]:.3g} ms."
        + (growth if len(T) > 1 else "")
        + " Flat stretches are fixed costs per call (Python, launching operations). "
        + term("log_log", "Both axes are logarithmic")
        + ": each step along one multiplies."
    )


def memory_text(data) -> str:
    T, one = list(data.num_tokens), data.one_weights_mib
    return (
        "The peak memory of one call: its intermediates and output. Dashed: one (b, num_heads, T, T) float32 tensor, "
        f"b·num_heads·T²·4 bytes, computed, not measured ({amount(one[-1])} at T = {T[-1]}). Lines parallel to it "
        f"grow as T²; lines half as steep grow as T ({term('log_log', 'both axes are logarithmic')})."
    )


def why_text(data) -> str:
    T, one, memory, k = list(data.num_tokens), data.one_weights_mib, data.peak_memory_mib, data.memory_exponent
    grew = f" From T = {T[-3:][0]} to {T[-1]} its memory grew as $T^{{{k[REFERENCE]:.1f}}}$." if len(T) > 1 else ""
    linear = f", growing as $T^{{{k[FUSED]:.1f}}}$ and $T^{{{k['fast_multihead']:.1f}}}$," if len(T) > 1 else ""
    return (
        f"At T = {T[-1]}, `trace` peaks at {mib(data, 'trace')}, {memory['trace'][-1] / one[-1]:.1f}× one "
        f"`attn_weights` tensor ({amount(one[-1])}): it keeps the book's masked scores and the attention weights, "
        f"and takes {pace(data, 'trace')}. `{REFERENCE}`, the book's code, makes the same two plus the scaled "
        f"scores, a third, and drops them when it returns: {mib(data, REFERENCE)}.{grew} `nn.MultiheadAttention` makes "
        "the scores and returns every head's attention weights: "
        f"{mib(data, 'nn.MultiheadAttention')}, {pace(data, 'nn.MultiheadAttention')}. The wrapper holds one "
        f"head's (b, T, T) tensors at a time ({mib(data, 'MultiHeadAttentionWrapper')}) but runs "
        f"{data.sizes['num_heads']} smaller products one after another: {pace(data, 'MultiHeadAttentionWrapper')}. "
        f"`{FUSED}` and `fast_multihead` use one {term('fused_kernel')}: a single operation for scores, softmax "
        "and values. "
        f"{fused_memory(data)}: {mib(data, FUSED)} and "
        f"{mib(data, 'fast_multihead')}{linear} and take {ratio(data, FUSED):.1f}× and "
        f"{ratio(data, 'fast_multihead'):.1f}× the time of `{REFERENCE}`."
    )


def fused_memory(data) -> str:
    """Whether the fused kernel's backend kept a T × T tensor here, read from the measured peak memory."""
    if data.peak_memory_mib[FUSED][-1] < data.one_weights_mib[-1]:
        return "Measured, its backend here kept less than one T × T tensor"
    return "Measured, its backend here kept at least one T × T tensor, so it stored the scores"


def why_rows(data) -> tuple[list[tuple], list[str]]:
    """Every implementation's time and memory at the largest T, as (rows, column names)."""
    T, one, memory = list(data.num_tokens), data.one_weights_mib, data.peak_memory_mib
    rows = [(n, data.time_ms[n][-1], ratio(data, n), memory[n][-1], memory[n][-1] / one[-1]) for n in data.time_ms]
    columns = ["implementation", f"ms at T = {T[-1]}", f"× {REFERENCE}", "peak MiB", "× one attn_weights tensor"]
    return rows, columns
