"""The Speed page's sentences that depend on the measurement: each is said only where the numbers support it.

A growth exponent is stated with its spread, and only when it was fitted where the T × T work dominates
(``attention.measuring.speed.time_growth``); a peak memory is compared with one T × T tensor only where that tensor
outweighs the call's (b, T, d_model) tensors (``t_by_t_dominates``). Ratios never round to 0.
"""

from __future__ import annotations

from attention.measuring.speed import FIXED_COST_MULTIPLE, Growth, t_by_t_dominates


def times(ratio: float) -> str:
    """A ratio with the digits it needs: 12×, 2.5×, 0.034×; never 0.0× for a ratio above 0."""
    if ratio >= 10:
        return f"{ratio:.0f}×"
    if ratio >= 0.1:
        return f"{ratio:.1f}×"
    return f"{ratio:.2g}×"


def number(value: float) -> str:
    """A table's number to 3 significant digits, without an exponent from 0.0001 up: 1,234, 44.4, 0.623."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def amount(value_mib: float) -> str:
    """MiB above one, KiB below: 1.5 MiB, 320 KiB."""
    return f"{value_mib:.1f} MiB" if value_mib >= 1 else f"{value_mib * 1024:.0f} KiB"


def plan_words(plan) -> str:
    """What the default sizes are and why: ``plan`` is ``explorer.views.beyond.SpeedPlan``."""
    sizes = plan.num_tokens
    cores = f"{plan.threads} of {plan.cores} cores" if plan.threads < plan.cores else f"{plan.cores} cores"
    words = (
        f"The default sizes fit this machine: T (the book's num_tokens) from {sizes[0]} to {sizes[-1]}, which "
        f"should take about {plan.predicted_s:.0f} s to measure. Each token's vector has d_model numbers, in and "
        "out: every implementation has the book's d_in = d_out = d_model. One call of each implementation at T = "
        f"256 took {plan.probe_ms:.0f} ms in all, on {cores} (load average {plan.load:.1f})."
    )
    if plan.next_tokens is not None:
        words += f" With T = {plan.next_tokens} it would take about {plan.next_s:.0f} s."
    return words


def power(k: float) -> str:
    """T to the power k, in words: plain text renders at once on every screen, where LaTeX may lag."""
    return f"T to the power {k:.1f}"


def growth_words(growths: dict[str, Growth | None], rounds: int, d_model: int) -> str:
    """How each implementation's time grew with T, with its spread; or, for all those it cannot tell, why not."""
    said, untold = [], [f"`{name}`" for name, growth in growths.items() if growth is None]
    for name, growth in growths.items():
        if growth is None:
            continue
        span = f"From T = {growth.num_tokens[0]} to {growth.num_tokens[-1]}"
        if growth.clear:
            said.append(
                f"{span}, `{name}`'s time grew as {power(growth.exponent)} ({growth.low:.1f} to {growth.high:.1f} "
                "over resampled rounds)."
            )
        else:
            said.append(
                f"{span}, `{name}`'s rounds disagree too much to tell how its time grew: anything from "
                f"{power(growth.low)} to {growth.high:.1f}."
            )
    names = " and ".join(untold)
    if untold and rounds < 2:
        said.append(f"One timing round per T cannot tell how the time of {names} grows: it gives no spread.")
    elif untold:
        said.append(
            f"Too few sizes to tell how the time of {names} grows where the T × T work dominates: T ≥ {2 * d_model} "
            f"(twice d_model) and {FIXED_COST_MULTIPLE}× the smallest T's time."
        )
    return " ".join(said)


def load_words(load: float, threads: int) -> str:
    """A warning that times scatter, when other work kept the machine busy; empty otherwise."""
    if not load >= threads:
        return ""
    return (
        f"The load average was {load:.1f} as it started: other work shared these cores, so calls were delayed "
        "at random and the times scatter."
    )


def memory_growth_words(growth: Growth | None) -> str:
    """How the book module's peak memory grew, where one T × T tensor dominates; empty where it does not."""
    if growth is None:
        return ""
    span = (
        f" From T = {growth.num_tokens[0]} to {growth.num_tokens[-1]} its peak memory grew as {power(growth.exponent)}"
    )
    if round(growth.low, 1) == round(growth.high, 1):
        return span + "."
    return span + f" ({growth.low:.1f} to {growth.high:.1f} between neighboring T)."


def kept_words(peaks_mib: tuple[float, float], one_mib: float, num_tokens: int, d_model: int, num_heads: int) -> str:
    """What the fused calls' peaks (``F.scaled_dot_product_attention``'s, ``fast_multihead``'s) say about the scores.

    Their peak is compared with one (b, num_heads, T, T) tensor only where that tensor is at least
    ``LINEAR_TENSORS`` (b, T, d_model) tensors: then a peak below it means no scores were stored, and at or above
    it, that some T × T tensor was.
    """
    peaks = f"{amount(peaks_mib[0])} and {amount(peaks_mib[1])}"
    if not t_by_t_dominates(num_tokens, d_model, num_heads):
        return (
            f"They peaked at {peaks}. At T = {num_tokens}, one T × T tensor ({amount(one_mib)}) is too small beside "
            f"their (b, T, d_model) tensors to tell from peak memory whether their backend stored the scores."
        )
    if max(peaks_mib) < one_mib:
        return f"Measured, they peaked at {peaks}, less than one T × T tensor ({amount(one_mib)}): no scores stored."
    return (
        f"Measured, they peaked at {peaks}, at least one T × T tensor ({amount(one_mib)}): "
        "their backend here stored the scores."
    )


def trace_words(peak_mib: float, one_mib: float, num_tokens: int, d_model: int, num_heads: int) -> str:
    """``trace``'s peak, as a multiple of one ``attn_weights`` tensor only where that tensor dominates the peak."""
    if t_by_t_dominates(num_tokens, d_model, num_heads):
        return f"`trace` peaks at {amount(peak_mib)}, {times(peak_mib / one_mib)} one `attn_weights` tensor"
    return f"`trace` peaks at {amount(peak_mib)}, mostly (b, T, d_model) tensors at these sizes"
