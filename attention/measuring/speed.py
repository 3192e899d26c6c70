"""Measuring what each way of computing attention costs.

What is new: nothing to compute; this module *measures*. ``measure`` runs one
``MultiHeadAttention``'s parameters through several implementations that all
give the same output, at several sequence lengths T, and records each one's
median time and peak memory. What separates them is what they keep:

* ``MultiHeadAttention`` (the chapter's module) runs the book's lines as they
  are: ``attn_scores`` (masked in place), the scaled scores and
  ``attn_weights`` are each a (b, num_heads, T, T) tensor, up to three alive
  at once, each freed when nothing refers to it;
* the wrapper's heads run one after another, so only one head's (b, T, T)
  tensors exist at a time, but each head is a separate, smaller product;
* ``trace`` keeps the masked ``attn_scores`` and ``attn_weights`` and derives
  the other steps only when asked. With dropout off it runs
  ``fast.multihead_steps``: the module's numbers bit for bit, with the softmax
  in the weights' own tensor, so two (b, num_heads, T, T) tensors, not three;
* ``torch.nn.MultiheadAttention`` asked for each head's weights
  (``need_weights=True, average_attn_weights=False``) makes and returns them;
  asked for none (``need_weights=False``) it returns none, and whether it
  still makes them depends on PyTorch's fast-path conditions: measured, not assumed;
* ``F.scaled_dot_product_attention`` (after the book's three projections) and
  ``fast_multihead`` call one fused kernel. Which kernel runs depends on the
  backend PyTorch picks for the device, dtype and sizes; a flash or
  memory-efficient one never stores a T × T matrix, so memory grows as T,
  not T², while its plain fallback stores one. Measured, not assumed.

How it measures (``measure``): inputs and parameters are seeded; everything
runs in eval mode under ``torch.inference_mode()``. Time is the median of
single calls over ``repeats`` rounds. Each round calls every implementation
once, in an order shuffled with a fixed seed, so a burst of load from another
process slows them all alike and none always follows the same neighbor (after
one frees a gigabyte, say); one that takes less than ``MIN_ROUND_S`` is called
several times per round, each call timed. The median ignores the calls that a
busy machine stalls. Memory (``peak_memory_bytes``) is the most memory torch's
allocator had handed out at any moment of one call, beyond what was allocated
before it: the call's intermediates and its output, not the input or the
parameters. Memory that bypasses torch's allocator (BLAS work space, thread
stacks) is not counted. The load average (``os.getloadavg``) before and after
is recorded, because on a shared machine it says how far to trust the times.

How fast a cost grows (``time_growth``, ``memory_growth``): an exponent k
in cost ∝ T^k is fitted only over the T where the T × T work dominates, with
its spread (a bootstrap over the timing rounds for time; the slopes between
neighboring T for memory), or not at all. ``plan_measurement`` picks the
sizes whose measurement fits a time on this machine, from a probe at T = 256.

``benchmarks/bench_attention.py`` is the command line over ``measure``, for
sizes beyond the Speed page's (GPT-2's b=8, T=1,024, d=768, h=12).
"""

from __future__ import annotations

import math
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..causal import causal_mask
from ..checks import MAX_CONTEXT_LENGTH, MAX_HEADS, check_size
from ..multihead import MultiHeadAttention, MultiHeadAttentionWrapper, to_torch_multihead
from ..tracing import build, trace
from .fast import fast_multihead

SEED = 123
MIN_ROUND_S = 0.005  # a timing round calls a faster implementation several times
MAX_CALLS_PER_ROUND = 100
MAX_BATCH = 64
MAX_REPEATS = 100
MAX_WEIGHTS_BYTES = 256 * 2**20  # the largest (b, num_heads, T, T) float32 tensor measure() will make
MIB = 2**20
FIXED_COST_MULTIPLE = 10  # a growth is fitted where a call takes this many times its time at the smallest T
MAX_SPREAD = 0.5  # a fitted exponent whose 5–95% interval is wider than this says nothing
RESAMPLES = 1000  # bootstrap resamples of the timing rounds
LINEAR_TENSORS = 8  # (b, T, d_model) tensors a call may hold at once: q, k, v, their copies, context, output
PROBE_TOKENS = 256  # plan_measurement() times one call of each implementation at this T
LOOP_OVERHEAD = 1.5  # what the calls alone leave out: 2-core runs at load 13-15 took 1.0-1.7 times their sum
PROFILE_S = 0.015  # what one memory measurement adds to its call (the profiler's start and stop), on a busy 2-core CPU

Call = Callable[[torch.Tensor], torch.Tensor]


def chapter_module(mha: MultiHeadAttention) -> Call:
    """The chapter's ``MultiHeadAttention.forward``."""
    return mha


def wrapper_of_heads(mha: MultiHeadAttention) -> Call:
    """``MultiHeadAttentionWrapper`` holding ``mha``'s heads, one ``CausalAttention`` each, then ``out_proj``.

    The inverse of ``multihead_from_wrapper``: head i gets rows
    i*head_dim to (i+1)*head_dim of each projection, so concatenating the
    heads gives ``mha``'s merged context vectors, and ``mha.out_proj`` mixes them.
    """
    has_bias = mha.W_query.bias is not None
    args = (mha.d_in, mha.head_dim, mha.mask.shape[0], 0.0, mha.num_heads)
    wrapper = build(MultiHeadAttentionWrapper, SEED, *args, qkv_bias=has_bias).to(mha.W_query.weight.device)
    with torch.no_grad():
        for i, head in enumerate(wrapper.heads):
            rows = slice(i * mha.head_dim, (i + 1) * mha.head_dim)
            for name in ("W_query", "W_key", "W_value"):
                getattr(head, name).weight.copy_(getattr(mha, name).weight[rows])  # (head_dim, d_in)
                if has_bias:
                    getattr(head, name).bias.copy_(getattr(mha, name).bias[rows])  # (head_dim,)
    return lambda x: mha.out_proj(wrapper(x))  # (b, T, d_out)


def traced(mha: MultiHeadAttention) -> Call:
    """``trace(mha, x)``, which keeps what the forward made, then its output."""
    return lambda x: trace(mha, x).output  # (b, T, d_out)


def torch_module(mha: MultiHeadAttention, *, need_weights: bool) -> Call:
    """``torch.nn.MultiheadAttention`` with ``mha``'s weights and the causal mask; needs ``d_in == d_out``.

    With ``need_weights`` it also returns every head's weights
    (``average_attn_weights=False``), which the call then drops.
    """
    torch_mha = to_torch_multihead(mha).to(mha.W_query.weight.device).eval()
    mask = causal_mask(mha.mask.shape[0]).to(mha.W_query.weight.device)  # (context_length, context_length)

    def call(x: torch.Tensor) -> torch.Tensor:
        T = x.shape[1]
        output, _weights = torch_mha(
            x, x, x, attn_mask=mask[:T, :T], need_weights=need_weights, average_attn_weights=False
        )  # (b, T, d_out), and (b, num_heads, T, T) or None
        return output

    return call


def torch_module_with_weights(mha: MultiHeadAttention) -> Call:
    """``torch.nn.MultiheadAttention(..., need_weights=True, average_attn_weights=False)``."""
    return torch_module(mha, need_weights=True)


def torch_module_without_weights(mha: MultiHeadAttention) -> Call:
    """``torch.nn.MultiheadAttention(..., need_weights=False)``."""
    return torch_module(mha, need_weights=False)


def sdpa_after_projections(mha: MultiHeadAttention) -> Call:
    """The book's three projections, then PyTorch's fused ``F.scaled_dot_product_attention``."""

    def call(x: torch.Tensor) -> torch.Tensor:
        b, T, _ = x.shape
        heads = (b, T, mha.num_heads, mha.head_dim)
        queries = mha.W_query(x).view(heads).transpose(1, 2)  # (b, num_heads, T, head_dim)
        keys = mha.W_key(x).view(heads).transpose(1, 2)  # (b, num_heads, T, head_dim)
        values = mha.W_value(x).view(heads).transpose(1, 2)  # (b, num_heads, T, head_dim)
        context_vec = F.scaled_dot_product_attention(queries, keys, values, is_causal=True)  # (b, num_heads, T, hd)
        context_vec = context_vec.transpose(1, 2).reshape(b, T, mha.d_out)  # (b, T, d_out)
        return mha.out_proj(context_vec)  # (b, T, d_out)

    return call


def fused(mha: MultiHeadAttention) -> Call:
    """``fast_multihead``: one stacked projection and the fused kernel (``fast``)."""
    return lambda x: fast_multihead(mha, x)  # (b, T, d_out)


@dataclass(frozen=True)
class Implementation:
    """One way to run a ``MultiHeadAttention``'s parameters."""

    stage: str  # where it comes from
    keeps: str  # what it holds in memory at once, besides the (b, T, ·) projections
    build: Callable[[MultiHeadAttention], Call]  # the module → a call x → output


IMPLEMENTATIONS = {
    "MultiHeadAttention": Implementation(
        "3.6, the chapter's module",
        "the scores, scaled scores and attention weights, (b, num_heads, T, T) each",
        chapter_module,
    ),
    "MultiHeadAttentionWrapper": Implementation(
        "3.6, heads one by one", "one head's (b, T, T) tensors at a time", wrapper_of_heads
    ),
    "trace": Implementation(
        "the package's trace (not in the book), every step kept",
        "attn_scores and attn_weights, the softmax in place; the other steps derived when asked",
        traced,
    ),
    "nn.MultiheadAttention": Implementation(
        "PyTorch, attention weights returned",
        "the scores and the attention weights it returns, (b, num_heads, T, T) each",
        torch_module_with_weights,
    ),
    "nn.MultiheadAttention without attention weights": Implementation(
        "PyTorch, need_weights=False",
        "what PyTorch's path needs; it returns no attention weights",
        torch_module_without_weights,
    ),
    "F.scaled_dot_product_attention": Implementation(
        "PyTorch's fused kernel",
        "what its backend needs: flash-style kernels keep no T × T matrix; PyTorch picks the backend",
        sdpa_after_projections,
    ),
    "fast_multihead": Implementation(
        "the package's fast_multihead (not in the book), fused kernel, one projection",
        "as the fused kernel; and the stacked (3 d_out, d_in) weight matrix",
        fused,
    ),
}


def expected_attention_bytes(batch_size: int, num_heads: int, num_tokens: int, element_size: int = 4) -> int:
    """Bytes of one (b, num_heads, T, T) tensor of ``element_size``-byte numbers (float32: 4).

    Computed, not measured: what one ``attn_weights`` tensor takes.
    """
    return batch_size * num_heads * num_tokens * num_tokens * element_size


def synchronize(device: torch.device) -> None:
    """Wait for the GPU to finish (CUDA calls return before their work is done)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_memory_bytes(call: Call, x: torch.Tensor) -> int:
    """The most bytes torch's allocator had handed out during ``call(x)``, beyond those allocated before it.

    On CUDA: ``torch.cuda.max_memory_allocated`` after a reset, minus what
    was allocated before. On CPU: ``torch.autograd.profiler`` with
    ``profile_memory=True`` records every allocation and free the calling
    thread makes through torch's allocator; their running sum, in time order,
    peaks at this number. The profiler's library (kineto) would otherwise
    write "USDT ... profiler_start" and "profiler_stop" to stderr on every
    call, filling a server's log: unless ``KINETO_LOG_LEVEL`` is set, it is
    set to silence them before the first profile reads it.
    """
    if x.device.type == "cuda":
        synchronize(x.device)
        torch.cuda.reset_peak_memory_stats(x.device)
        before = torch.cuda.memory_allocated(x.device)
        call(x)
        synchronize(x.device)
        return torch.cuda.max_memory_allocated(x.device) - before
    os.environ.setdefault("KINETO_LOG_LEVEL", "99")  # read once, at the first profile: no USDT lines on stderr
    with torch.autograd.profiler.profile(profile_memory=True) as profile:
        call(x)
    events = [event for event in profile.kineto_results.events() if event.name() == "[memory]"]
    allocated = peak = 0
    for event in sorted(events, key=lambda event: event.start_ns()):
        allocated += event.nbytes()  # negative for a free
        peak = max(peak, allocated)
    return peak


def call_seconds(call: Call, x: torch.Tensor, number: int) -> list[float]:
    """The wall time of each of ``number`` calls, waiting for the GPU after each."""
    seconds = []
    for _ in range(number):
        synchronize(x.device)
        start = time.perf_counter()
        call(x)
        synchronize(x.device)
        seconds.append(time.perf_counter() - start)
    return seconds


def log_log_slope(sizes: Sequence[float], values: Sequence[float]) -> float:
    """The slope of a least-squares line through (log T, log value): k in value ∝ T^k."""
    xs, ys = [math.log(t) for t in sizes], [math.log(v) for v in values]
    x_mean, y_mean = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - x_mean) ** 2 for x in xs)
    return sum((x - x_mean) * (y - y_mean) for x, y in zip(xs, ys, strict=True)) / spread


@dataclass(frozen=True)
class Growth:
    """cost ∝ T^exponent over ``num_tokens``; ``low`` to ``high`` is its spread (see where it is made)."""

    exponent: float
    low: float
    high: float
    num_tokens: tuple[int, ...]  # the T it was fitted over, at least two

    @property
    def clear(self) -> bool:
        """Whether the spread is narrow enough (``MAX_SPREAD``) for the exponent to say something."""
        return self.high - self.low <= MAX_SPREAD


def time_growth(num_tokens: Sequence[int], rounds_ms: Sequence[Sequence[float]], d_model: int) -> Growth | None:
    """The exponent of time ∝ T^k fitted where the T × T work dominates, with a bootstrap interval over rounds.

    Fitted over the T at which a call takes at least ``FIXED_COST_MULTIPLE``
    times its time at the smallest T (so the fixed cost per call, at most
    that time, is a tenth or less) and T ≥ 2 d_model (so the two T × T
    products, 2 b T² d_model multiply-adds, outweigh the four projections'
    4 b T d_model²). ``rounds_ms[i]`` holds one median per timing round at
    ``num_tokens[i]``. The exponent is the log–log slope through each T's
    median of rounds; ``low`` and ``high`` are the 5th and 95th percentiles
    of that slope over ``RESAMPLES`` resamplings of each T's rounds, with a
    fixed seed. None when fewer than two T qualify; with one round per T the
    interval is a point, so callers also need ``len(rounds) > 1``.
    """
    medians = [statistics.median(r) for r in rounds_ms]
    at_start = medians[0]
    chosen = [
        i for i, (size, m) in enumerate(zip(num_tokens, medians, strict=True))
        if m >= FIXED_COST_MULTIPLE * at_start and size >= 2 * d_model
    ]  # fmt: skip
    if len(chosen) < 2 or min(len(rounds_ms[i]) for i in chosen) < 2:
        return None
    sizes = [num_tokens[i] for i in chosen]
    draw = random.Random(SEED)  # noqa: S311 (a seeded resampling, not a secret)
    slopes = sorted(
        log_log_slope(sizes, [statistics.median(draw.choices(rounds_ms[i], k=len(rounds_ms[i]))) for i in chosen])
        for _ in range(RESAMPLES)
    )
    low, high = slopes[int(0.05 * RESAMPLES)], slopes[int(0.95 * RESAMPLES) - 1]
    return Growth(log_log_slope(sizes, [medians[i] for i in chosen]), low, high, tuple(sizes))


def memory_growth(num_tokens: Sequence[int], peak_mib: Sequence[float], d_model: int, num_heads: int) -> Growth | None:
    """The exponent of peak memory ∝ T^k where one (b, num_heads, T, T) tensor outweighs ``LINEAR_TENSORS``
    (b, T, d_model) tensors (num_heads T ≥ 8 d_model); ``low`` to ``high`` is the range of the slopes between
    neighboring T (memory is not noisy, but it need not grow evenly). None with fewer than two such T."""
    chosen = [i for i, T in enumerate(num_tokens) if t_by_t_dominates(T, d_model, num_heads) and peak_mib[i] > 0]
    if len(chosen) < 2:
        return None
    sizes, values = [num_tokens[i] for i in chosen], [peak_mib[i] for i in chosen]
    local = [log_log_slope(sizes[j : j + 2], values[j : j + 2]) for j in range(len(sizes) - 1)]
    return Growth(log_log_slope(sizes, values), min(local), max(local), tuple(sizes))


def t_by_t_dominates(num_tokens: int, d_model: int, num_heads: int) -> bool:
    """Whether one (b, num_heads, T, T) tensor is at least ``LINEAR_TENSORS`` (b, T, d_model) tensors: then a
    peak above one T × T tensor means the call stored one, and below it means it stored none."""
    return num_heads * num_tokens * num_tokens >= LINEAR_TENSORS * num_tokens * d_model


@dataclass(frozen=True)
class SpeedResult:
    """The median time of one call and the peak memory, per implementation and sequence length.

    ``time_ms[name][i]`` and ``peak_memory_mib[name][i]`` belong to
    ``num_tokens[i]``; ``round_ms[name][i]`` holds the median call of each
    timing round there. ``max_abs_difference[name]`` is the largest
    |output − ``MultiHeadAttention``'s output| over every T. ``load_before``
    and ``load_after`` are ``os.getloadavg()`` (1, 5 and 15 minutes) around
    the measurement.
    """

    implementations: tuple[str, ...]
    num_tokens: tuple[int, ...]
    time_ms: dict[str, tuple[float, ...]]
    peak_memory_mib: dict[str, tuple[float, ...]]
    max_abs_difference: dict[str, float]
    batch_size: int
    d_model: int
    num_heads: int
    repeats: int
    device: str
    load_before: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    load_after: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    rounds: tuple[int, ...] = ()
    skipped_tokens: tuple[int, ...] = ()
    round_ms: dict[str, tuple[tuple[float, ...], ...]] = field(default_factory=dict)

    def ratio(self, name: str, to: str, metric: str = "time_ms") -> tuple[float, ...]:
        """``name``'s medians (or peaks) divided by ``to``'s, at each T."""
        mine, theirs = getattr(self, metric)[name], getattr(self, metric)[to]
        return tuple(a / b if b > 0 else math.nan for a, b in zip(mine, theirs, strict=True))

    def growth_exponent(self, name: str, metric: str = "time_ms", points: int = 3) -> float:
        """k in cost ∝ T^k at the largest T: the slope of a least-squares line on log–log axes through
        the ``points`` largest T (all of them if there are fewer); nan with one T. No spread, no check
        that the T² term dominates: ``time_growth`` and ``memory_growth`` have both."""
        sizes, values = self.num_tokens[-points:], getattr(self, metric)[name][-points:]
        if len(sizes) < 2 or min(values) <= 0:
            return math.nan
        return log_log_slope(sizes, values)

    def time_growth(self, name: str) -> Growth | None:
        """``time_growth`` of ``name``'s timing rounds."""
        return time_growth(self.num_tokens, self.round_ms[name], self.d_model)

    def memory_growth(self, name: str) -> Growth | None:
        """``memory_growth`` of ``name``'s peaks."""
        return memory_growth(self.num_tokens, self.peak_memory_mib[name], self.d_model, self.num_heads)


@dataclass(frozen=True)
class Plan:
    """The sizes ``plan_measurement`` chose and what it predicted."""

    num_tokens: tuple[int, ...]  # the smallest candidates whose measurement should fit
    predicted_s: float  # the measurement of ``num_tokens``, predicted
    probe_ms: float  # one call of every implementation at ``PROBE_TOKENS``, summed, as timed
    next_tokens: int | None = None  # the first candidate left out
    next_s: float = math.nan  # the measurement with it, predicted


def predicted_seconds(probe_s: Sequence[float], num_tokens: int, repeats: int) -> float:
    """``measure``'s seconds at one T, from each implementation's one call at ``PROBE_TOKENS`` (``probe_s``).

    A call is assumed to grow as T² above the probe and as T below it, so
    at the largest sizes, where a plan is decided, the prediction errs high. Per implementation: three calls
    (the comparison, one timed call and the memory call) and ``repeats`` rounds of at least ``MIN_ROUND_S``,
    plus ``PROFILE_S`` for the memory call's profiler; all of it times ``LOOP_OVERHEAD``.
    """
    scale = num_tokens / PROBE_TOKENS
    per_call = [s * max(scale, scale**2) for s in probe_s]
    return LOOP_OVERHEAD * sum(3 * t + repeats * max(t, MIN_ROUND_S) + PROFILE_S for t in per_call)


def plan_measurement(
    implementations: Sequence[str],
    candidates: Sequence[int],
    *,
    d_model: int,
    num_heads: int,
    batch_size: int = 1,
    repeats: int = 3,
    target_s: float,
    device: str = "cpu",
    min_sizes: int = 3,
) -> Plan:
    """The smallest ``candidates`` that ``measure`` at these sizes should finish within ``target_s`` on this
    machine, as it is loaded now: at least ``min_sizes`` of them.

    It times each implementation at T = ``PROBE_TOKENS``, the median of
    three calls after a warm-up call, with the threads torch has now, and predicts each
    T's share with ``predicted_seconds``.
    """
    names = tuple(implementations)
    check_request(names, [PROBE_TOKENS, *candidates], d_model, num_heads, batch_size, repeats)
    where = check_device(device)
    mha = build(MultiHeadAttention, SEED, d_model, d_model, PROBE_TOKENS, 0.0, num_heads=num_heads).to(where)
    x = torch.rand(batch_size, PROBE_TOKENS, d_model, generator=torch.Generator().manual_seed(SEED)).to(where)
    probe_s = []
    with torch.inference_mode():
        for name in names:
            call = IMPLEMENTATIONS[name].build(mha)
            call(x)  # warm-up
            probe_s.append(statistics.median(call_seconds(call, x, 3)))
    return choose_sizes(probe_s, candidates, repeats, target_s, min_sizes)


def choose_sizes(probe_s: Sequence[float], candidates: Sequence[int], repeats: int, target_s: float, min_sizes: int):
    """``plan_measurement``'s choice from the probe's seconds: candidates from the smallest up while the predicted
    total stays within ``target_s``, and at least ``min_sizes`` of them."""
    total, chosen = 0.0, []
    for T in sorted(set(candidates)):
        cost = predicted_seconds(probe_s, T, repeats)
        if len(chosen) >= min_sizes and total + cost > target_s:
            return Plan(tuple(chosen), total, sum(probe_s) * 1e3, T, total + cost)
        total += cost
        chosen.append(T)
    return Plan(tuple(chosen), total, sum(probe_s) * 1e3)


def check_device(device: str) -> torch.device:
    """``"cpu"``, or ``"cuda"`` when a GPU is present."""
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device='cuda' needs a GPU, and this machine has none; use device='cpu'.")
        return torch.device("cuda")
    raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}.")


def check_request(
    implementations, num_tokens_list, d_model, num_heads, batch_size, repeats, max_weights_bytes=MAX_WEIGHTS_BYTES
) -> None:
    """Raise a ``ValueError`` a learner understands unless ``measure`` can run these sizes."""
    unknown = [name for name in implementations if name not in IMPLEMENTATIONS]
    if not implementations or unknown or len(set(implementations)) != len(implementations):
        choices = ", ".join(IMPLEMENTATIONS)
        raise ValueError(f"Choose implementations, each once, from {choices}; got {list(implementations)}.")
    if not num_tokens_list:
        raise ValueError("Choose at least one sequence length T.")
    for num_tokens in num_tokens_list:
        check_size("num_tokens", num_tokens, upper=MAX_CONTEXT_LENGTH)
    check_size("d_model", d_model)
    check_size("num_heads", num_heads, upper=MAX_HEADS)
    check_size("batch_size", batch_size, upper=MAX_BATCH)
    check_size("repeats", repeats, upper=MAX_REPEATS)
    if d_model % num_heads != 0:
        raise ValueError(f"d_model must be divisible by num_heads; {d_model} and {num_heads} do not divide.")
    largest = expected_attention_bytes(batch_size, num_heads, max(num_tokens_list))
    if largest > max_weights_bytes:
        raise ValueError(
            f"One (b, num_heads, T, T) tensor would take {largest / MIB:,.0f} MiB at these sizes, and an "
            f"implementation may hold several; the limit is {max_weights_bytes / MIB:,.0f} MiB per tensor. "
            "Use a smaller T, batch or num_heads."
        )


def measure(
    implementations: Sequence[str],
    num_tokens_list: Sequence[int],
    *,
    d_model: int,
    num_heads: int,
    batch_size: int = 1,
    repeats: int = 3,
    device: str = "cpu",
    on_progress: Callable[[int, int, str], None] | None = None,
    max_weights_bytes: int = MAX_WEIGHTS_BYTES,
    time_budget_s: float | None = None,
) -> SpeedResult:
    """Time each implementation and measure its peak memory at each sequence length T.

    The module is ``MultiHeadAttention(d_model, d_model, max T, 0.0,
    num_heads)`` built after ``torch.manual_seed(123)``, in eval mode (d_in =
    d_out = d_model, as ``torch.nn.MultiheadAttention`` needs). At each T every
    implementation is called once to warm up (its output is compared with the
    module's), timed in ``repeats`` rounds, then called once more to measure
    memory (see the module docstring). ``on_progress(done, total, label)`` is
    called after every step. ``max_weights_bytes`` bounds one (b, num_heads,
    T, T) tensor; the default keeps a shared server's measurement small.

    ``time_budget_s`` caps the whole measurement's time, for a shared server.
    A first pass runs from the smallest T up: each T gets its warm-up, one
    round and its memory call. A T that would not fit in what is left of the
    budget (predicted from the previous T's calls, scaled by T²) is skipped,
    with every larger T, and ``skipped_tokens`` lists them. The
    other rounds follow, each T in turn, while they fit; ``rounds[i]`` says how
    many ran at ``num_tokens[i]``, at least one.

    Shapes: the input at each T is (batch_size, T, d_model), uniform in [0, 1).
    """
    names = tuple(implementations)
    check_request(names, num_tokens_list, d_model, num_heads, batch_size, repeats, max_weights_bytes)
    where = check_device(device)
    sizes = tuple(sorted(set(num_tokens_list)))
    load_before = os.getloadavg()
    mha = build(MultiHeadAttention, SEED, d_model, d_model, sizes[-1], 0.0, num_heads=num_heads).to(where)
    calls = {name: IMPLEMENTATIONS[name].build(mha) for name in names}
    times: dict[str, list[float]] = {name: [] for name in names}
    memory: dict[str, list[float]] = {name: [] for name in names}
    per_round: dict[str, list[tuple[float, ...]]] = {name: [] for name in names}
    differences = dict.fromkeys(names, 0.0)
    total, done = len(sizes) * len(names) * (repeats + 2), 0
    shuffle = torch.Generator().manual_seed(SEED)
    started = time.perf_counter()
    budget = math.inf if time_budget_s is None else time_budget_s
    rounds: list[int] = []
    measured: list[int] = []
    previous: tuple[int, float] | None = None  # (T, seconds of one call of every implementation, summed)

    def left() -> float:
        return budget - (time.perf_counter() - started)

    def one_round(T: int) -> None:  # noqa: N803 (T, the sequence length, as everywhere here)
        """Every implementation's calls at T once, in a shuffled order."""
        for i in torch.randperm(len(names), generator=shuffle).tolist():
            samples[T][names[i]].extend(call_seconds(calls[names[i]], inputs[T], numbers[T][names[i]]))
            progress(f"T = {T}: timing {names[i]}")

    def progress(label: str) -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total, label)

    with torch.inference_mode():
        inputs, numbers, samples = {}, {}, {}
        for T in sizes:  # first pass: every T that fits gets a warm-up, one round and its memory
            if previous is not None and 4 * previous[1] * (T / previous[0]) ** 2 > left():
                break  # a comparison call, one timed call, one round and the memory call would not fit
            x = torch.rand(batch_size, T, d_model, generator=torch.Generator().manual_seed(SEED)).to(where)  # (b, T, d)
            expected = mha(x)  # (b, T, d_model)
            inputs[T], numbers[T], samples[T] = x, {}, {name: [] for name in names}
            for name, call in calls.items():
                differences[name] = max(differences[name], (call(x) - expected).abs().max().item())  # warm-up
                once = call_seconds(call, x, 1)[0]
                numbers[T][name] = max(1, min(MAX_CALLS_PER_ROUND, math.ceil(MIN_ROUND_S / max(once, 1e-9))))
                progress(f"T = {T}: warming up {name}")
            one_round(T)
            for name, call in calls.items():
                memory[name].append(peak_memory_bytes(call, x) / MIB)
                progress(f"T = {T}: memory of {name}")
            measured.append(T)
            previous = (T, sum(min(samples[T][name]) for name in names))
        for _ in range(repeats - 1):  # then more rounds, each T in turn, while they fit
            for T in measured:
                if 2 * sum(min(samples[T][name]) * numbers[T][name] for name in names) <= left():
                    one_round(T)
        for T in measured:
            for name in names:
                times[name].append(statistics.median(samples[T][name]) * 1e3)
                n = numbers[T][name]
                calls = samples[T][name]
                per_round[name].append(
                    tuple(statistics.median(calls[i : i + n]) * 1e3 for i in range(0, len(calls), n))
                )
            rounds.append(len(samples[T][names[0]]) // numbers[T][names[0]])
    return SpeedResult(
        implementations=names,
        num_tokens=tuple(measured),
        time_ms={name: tuple(values) for name, values in times.items()},
        peak_memory_mib={name: tuple(values) for name, values in memory.items()},
        max_abs_difference=differences,
        batch_size=batch_size,
        d_model=d_model,
        num_heads=num_heads,
        repeats=repeats,
        device=where.type,
        load_before=load_before,
        load_after=os.getloadavg(),
        rounds=tuple(rounds),
        skipped_tokens=sizes[len(measured) :],
        round_ms={name: tuple(values) for name, values in per_round.items()},
    )
