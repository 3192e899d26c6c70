"""The views of the pages beyond the chapter's steps, which import torch: Break it's mistakes, Generate's text with
and without the KV cache, and Speed's measurements. Like every view, each selects and converts, and does no math."""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields, replace

import numpy as np
import torch

import attention
from attention.measuring.costs import CACHE_SHAPES, macs_per_new_token
from attention.mistake_measures import LARGE_D_K, Measure
from attention.mistake_steps import RIGHT, Steps
from attention.tokens import BPE_NAME
from explorer.models import SPOKEN, from_tensors, model, module_for, tokenize_text, version
from explorer.runtime.memory import TurnQueue, shared_view
from explorer.runtime.server import machine_threads
from explorer.settings import BOOK, GPT2, TRAINED, Settings
from explorer.views import Run, heavy_turn, run_view
from explorer.views.chapter import BOOK_DROPOUT


@dataclass(frozen=True)
class SpeedView:
    """Every implementation's median time and peak memory against T, each (len(T),) or name → (len(T),)."""

    implementations: tuple[str, ...]
    num_tokens: np.ndarray
    time_ms: Mapping[str, np.ndarray]
    peak_memory_mib: Mapping[str, np.ndarray]
    time_growth: Mapping[str, attention.Growth | None]  # None where no T² regime was measured
    memory_growth: Mapping[str, attention.Growth | None]
    max_abs_difference: Mapping[str, float]
    one_weights_mib: np.ndarray
    sizes: Mapping[str, int]  # b, d_model, num_heads, repeats
    device: str
    rounds: tuple[int, ...] = ()  # timing rounds run at each T; fewer than repeats when the budget ran out
    skipped_tokens: tuple[int, ...] = ()  # the T not measured because they would not fit in the budget
    threads: int = 1  # torch threads it measured with
    load: float = float("nan")  # the 1-minute load average before it


SCALING_MISTAKES = {"no_scaling": "no scaling", "divide_by_d_k": "÷ d_k"}  # name → legend label


@dataclass(frozen=True)
class Curve:
    """``attention.SaturationCurve`` as numpy: every array (len(d_ks),)."""

    d_ks: np.ndarray
    right_max_weight: np.ndarray
    wrong_max_weight: np.ndarray
    right_grad_norm: np.ndarray
    wrong_grad_norm: np.ndarray
    right_param_grad: np.ndarray
    wrong_param_grad: np.ndarray
    num_keys: int


@dataclass(frozen=True)
class MistakeView:
    """One mistake beside the right code on the sentence, the first head of ``MultiHeadAttention``: ``*_weights`` (T, T)
    multiply the values; ``future`` (T, T) is True above the diagonal; ``weight_limit`` is the right code's largest."""

    name: str
    pieces: tuple[str, ...]
    truncated_from: int | None
    dropout: float
    num_heads: int
    head_dim: int
    weight_limit: float
    right_weights: np.ndarray
    wrong_weights: np.ndarray
    future: np.ndarray
    max_weight_difference: float
    nan_tokens: int
    measures: tuple[Measure, ...]
    curve: Curve | None
    large_d_k: int = LARGE_D_K
    cell_inputs: tuple = ()  # (the MistakeRun, the module, x): what ``derivations.mistake_cell`` reads for a cell

    def measure(self, key: str) -> Measure:
        """The measure named ``key`` (as ``attention.MistakeRun.measure``)."""
        return next(measure for measure in self.measures if measure.key == key)

    @property
    def nan_rows(self) -> np.ndarray:
        """(T,) True for the rows of ``wrong_weights`` that are NaN."""
        return np.isnan(self.wrong_weights).any(axis=-1)


def changed_step(name: str) -> tuple[Callable, Callable]:
    """The step of the forward pass that mistake ``name`` replaces: (the package's function, the mistaken one)."""
    steps = attention.MISTAKES[name].steps
    (changed,) = [f.name for f in fields(Steps) if getattr(steps, f.name) is not getattr(RIGHT, f.name)]
    return getattr(RIGHT, changed), getattr(steps, changed)


@run_view
def mistake_view(run: Run, name: str) -> MistakeView:
    """``attention.run_mistake(name, …)`` on the settings' module and sentence, as numpy; a ``ValueError`` for an
    unknown mistake or an empty sentence."""
    if name not in attention.MISTAKES:
        raise ValueError(f"Unknown mistake {name!r}; choose one of: {', '.join(attention.MISTAKES)}.")
    settings, prepared = run.settings, run.ready()
    rescaling = name == "dropout_without_rescale"  # the book's 0.5 for the dropout mistake when the sidebar's p is 0
    p = BOOK_DROPOUT if rescaling and settings.dropout == 0 else settings.dropout
    mha = module_for("MultiHeadAttention", replace(settings, dropout=p))  # random or a model's layer
    x = torch.tensor(prepared.inputs)  # (num_tokens, d_in), a copy of a read-only array
    result = attention.run_mistake(name, mha, x, seed=settings.seed)
    both = result.right_weights.isfinite() & result.wrong_weights.isfinite()  # (T, T)
    weight_difference = (result.wrong_weights - result.right_weights).abs()[both]  # (cells that are numbers in both,)
    return from_tensors(
        MistakeView,
        result,  # right_weights, wrong_weights, nan_tokens, measures
        name=name,
        pieces=prepared.pieces,
        truncated_from=prepared.truncated_from,
        dropout=p,
        num_heads=mha.num_heads,
        head_dim=mha.head_dim,
        weight_limit=1 / (1 - p) if rescaling else 1.0,
        future=attention.causal_mask(len(prepared.pieces)).numpy(),
        max_weight_difference=weight_difference.max().item() if weight_difference.numel() else float("nan"),
        curve=None if result.curve is None else from_tensors(Curve, result.curve),
        large_d_k=LARGE_D_K,
        cell_inputs=(result, mha, x),
    )


# Generate: a GPT writing after the learner's prompt, with and without the KV cache, one shared view per (model, prompt,
# options); ``token_times_view`` times a new token at a few lengths, in turn in the Speed page's ``SPEED_QUEUE``.
MAX_PAGE_TOKENS = 100  # the most new tokens one generation on this server makes
GENERATION_ENTRIES = 32  # a class works on ten or so sentences at once: keep them all (GPT-2 small: ~2 MB each)
TIMED_LENGTHS = (10, 20, 40, 80, 120)  # text lengths timed live, cut to the model's context_length
TIMED_REPEATS = 3


@dataclass(frozen=True)
class GenerationOptions:
    """``attention.generate``'s options on the page: ``temperature`` 0 is greedy; ``top_k`` None keeps every token."""

    max_new_tokens: int = 40
    temperature: float = 0.0
    top_k: int | None = None
    seed: int = 123


@dataclass(frozen=True)
class GenerationView:
    """A generation: step k chose new token k from the first ``prompt_tokens + k`` tokens, with ``attn_rows`` (n_new,
    n_layers, n_heads, T - 1) its query's rows, NaN past them; ``top_probs`` (n_new, 10); ``macs_*`` per later step."""

    model_name: str
    num_layers: int
    num_heads: int
    head_dim: int
    context_length: int
    prompt_tokens: int
    ids: tuple[int, ...]
    pieces: tuple[str, ...]
    options: GenerationOptions
    attn_rows: np.ndarray
    top_pieces: tuple[tuple[str, ...], ...]
    top_ids: np.ndarray
    top_probs: np.ndarray
    cache_tokens: tuple[int, ...]
    cache_bytes: tuple[int, ...]
    text_lengths: tuple[int, ...]  # the text's tokens at each step after the first
    macs_with: tuple[int, ...]
    macs_without: tuple[int, ...]

    @property
    def new_tokens(self) -> int:
        return len(self.ids) - self.prompt_tokens


@dataclass(frozen=True)
class CacheCheck:
    """The generation checked against generating without the cache and against reading the whole text at once; keys
    (n_layers, n_heads, T - 1, head_dim) as cached when the last token was chosen and from the whole text."""

    same_tokens: bool  # the cache's tokens equal those of generating without it
    logits_max_difference: float  # largest |logit with cache - logit without| over every step
    cache_keys: np.ndarray
    recomputed_keys: np.ndarray
    keys_max_difference: float
    values_max_difference: float


def model_kind(settings: Settings) -> str:
    """The model the page generates with: GPT-2 when the sidebar's Weights chose it, else the small GPT."""
    return GPT2 if settings.weights == GPT2 and model(GPT2) is not None else TRAINED


def of_settings(view, settings: Settings, options: GenerationOptions):
    """``view`` (``generation_view`` or ``cache_check_view``) for the sidebar's model and sentence."""
    kind = model_kind(settings)
    prompt = attention.BOOK_SENTENCE if settings.source == BOOK else settings.text
    on_miss = heavy_turn if kind == GPT2 else None  # GPT-2 without the cache reads the whole text every token
    return view(kind, version(kind), prompt, options, on_miss=on_miss)


def prompt_ids(prompt: str, context_length: int) -> tuple[int, ...]:
    """The prompt's GPT-2 token ids, or a ``ValueError`` a learner understands."""
    if not prompt.strip():
        raise ValueError("Type a prompt in the sidebar (My own sentence) for the model to continue.")
    tokenized = tokenize_text(prompt)
    if tokenized.tokenizer != BPE_NAME:
        raise ValueError("The model reads GPT-2 token ids, and GPT-2's tokenizer did not load.")
    if len(tokenized.ids) >= context_length:
        raise ValueError(
            f"The prompt has {len(tokenized.ids):,} tokens; this model reads at most {context_length} "
            "(its context_length), and each new token needs a place too. Shorten the prompt."
        )
    return tokenized.ids


@shared_view(max_entries=GENERATION_ENTRIES)
def generation_view(kind: str, loaded: int, prompt: str, options: GenerationOptions) -> GenerationView:
    """Generate after ``prompt`` with the model ``kind`` (``loaded`` is its ``version``) and the KV cache."""
    if not 1 <= options.max_new_tokens <= MAX_PAGE_TOKENS:  # the page's cap; the package checks the rest
        raise ValueError(
            f"This server generates 1 to {MAX_PAGE_TOKENS} new tokens at a time; {options.max_new_tokens} "
            f"were asked for. Ask for at most {MAX_PAGE_TOKENS}."
        )
    gpt = model(kind)
    cfg = gpt.cfg
    ids = prompt_ids(prompt, cfg.context_length)
    with_cache = attention.generate(gpt, ids, use_cache=True, **asdict(options))
    all_ids = with_cache.ids
    n_new, read = len(with_cache.tokens), len(all_ids) - 1  # the last token was chosen, never read
    rows = np.full((n_new, cfg.n_layers, cfg.n_heads, read), np.nan, dtype=np.float32)
    for k, token in enumerate(with_cache.tokens):
        for layer, row in enumerate(token.attn_rows):
            rows[k, layer, :, : row.shape[-1]] = row.numpy()
    decode = attention.load_bpe()
    steps = range(len(ids) + 1, len(all_ids))  # after the first step, one token is read at a time
    return GenerationView(
        model_name=SPOKEN[kind],
        num_layers=cfg.n_layers,
        num_heads=cfg.n_heads,
        head_dim=cfg.emb_dim // cfg.n_heads,
        context_length=cfg.context_length,
        prompt_tokens=len(ids),
        ids=all_ids,
        pieces=attention.decode_pieces(all_ids, encoding=decode),
        options=options,
        attn_rows=rows,
        top_pieces=tuple(
            tuple(attention.decode_pieces([i], encoding=decode)[0] for i in t.ids_top) for t in with_cache.tokens
        ),
        top_ids=np.array([t.ids_top for t in with_cache.tokens]),
        top_probs=np.array([t.probs_top for t in with_cache.tokens], dtype=np.float64),
        cache_tokens=tuple(t.cache_tokens for t in with_cache.tokens),
        cache_bytes=tuple(t.cache_bytes for t in with_cache.tokens),
        text_lengths=tuple(steps),
        macs_with=tuple(macs_per_new_token(cfg, t, use_cache=True).total for t in steps),
        macs_without=tuple(macs_per_new_token(cfg, t, use_cache=False).total for t in steps),
    )


@shared_view(max_entries=GENERATION_ENTRIES)
def cache_check_view(kind: str, loaded: int, prompt: str, options: GenerationOptions) -> CacheCheck:
    """``generation_view``'s generation against generating without the cache and against a full recomputation."""
    gpt = model(kind)
    ids = prompt_ids(prompt, gpt.cfg.context_length)
    with_cache = attention.generate(gpt, ids, use_cache=True, **asdict(options))
    without_cache = attention.generate(gpt, ids, use_cache=False, **asdict(options))
    pairs = zip(with_cache.tokens, without_cache.tokens, strict=True)
    grown, recomputed = cache_against_recomputation(gpt, with_cache.ids[:-1], len(ids))
    return CacheCheck(
        same_tokens=with_cache.new_ids == without_cache.new_ids,
        logits_max_difference=max(float((a.logits - b.logits).abs().max()) for a, b in pairs),
        cache_keys=grown[0],
        recomputed_keys=recomputed[0],
        keys_max_difference=float(np.abs(grown[0] - recomputed[0]).max()),
        values_max_difference=float(np.abs(grown[1] - recomputed[1]).max()),
    )


generation = functools.partial(of_settings, generation_view)  # (settings, options) → GenerationView
cache_check = functools.partial(of_settings, cache_check_view)  # (settings, options) → CacheCheck


def cache_against_recomputation(gpt, ids, prompt_tokens: int):
    """Every layer's keys and values, (n_layers, n_heads, len(ids), head_dim), as the cache grew (the prompt, then one
    token at a time) and from one pass over the whole text."""
    model_with_cache = attention.GPTWithCache(gpt)
    with torch.no_grad():
        grown = model_with_cache.step(torch.tensor([ids[:prompt_tokens]]))  # (1, prompt_tokens)
        for position in range(prompt_tokens, len(ids)):
            grown = model_with_cache.step(torch.tensor([ids[position : position + 1]]), grown.caches)  # (1, 1)
        at_once = model_with_cache.step(torch.tensor([ids]))  # (1, len(ids)): no cache, every row computed

    def stacked(step):
        keys = torch.stack([cache.keys[0] for cache in step.caches])  # (n_layers, n_heads, T, head_dim)
        values = torch.stack([cache.values[0] for cache in step.caches])  # (n_layers, n_heads, T, head_dim)
        return keys.numpy(), values.numpy()

    return stacked(grown), stacked(at_once)


def window_masks(num_tokens: int, window: int) -> tuple[np.ndarray, np.ndarray]:
    """The causal mask and the sliding-window mask of ``window`` tokens, True where a query must not look."""
    causal = attention.sliding_window_mask(num_tokens, None).numpy()  # (num_tokens, num_tokens)
    return causal, attention.sliding_window_mask(num_tokens, window).numpy()


def cache_rows(num_tokens: int) -> list[tuple]:
    """``CACHE_SHAPES`` as table rows: the bytes per token and the cache of ``num_tokens`` tokens."""
    return [
        (s.model, s.kind, s.num_layers, s.num_heads, s.num_kv_heads, s.head_dim, s.dtype, s.bytes_per_token,
         s.bytes_per_token * num_tokens / 2**20)
        for s in CACHE_SHAPES
    ]  # fmt: skip


@shared_view(max_entries=4)
def token_times_view(kind: str, loaded: int, *, on_progress=None) -> attention.TokenTimes:
    """One new token timed with and without the cache at ``TIMED_LENGTHS``; call it through ``timed``."""
    gpt = model(kind)
    lengths = tuple(n for n in TIMED_LENGTHS if n <= gpt.cfg.context_length)
    return attention.measure_token_times(gpt, lengths, repeats=TIMED_REPEATS)


def timed(settings: Settings, *, on_progress=None) -> attention.TokenTimes:
    """``token_times_view`` for the settings' model, in turn (``in_turn``)."""
    kind = model_kind(settings)
    return in_turn(token_times_view, kind, version(kind), on_progress=on_progress)


# Speed: the chapter's attention timed seven ways, one measurement at a time, first come first served (``SPEED_QUEUE``),
# each within ``SPEED_BUDGET_S``; a result measured before is returned at once, without queueing.
SPEED_ENTRIES = 16
SPEED_BUDGET_S = 20.0  # each measurement stops within this; the queue's wait is a multiple of it
SPEED_PLAN_S = 4.0  # the default run, predicted: at load 13-21 on 2 cores runs took up to 1.9× this, page included
PLAN_EVERY_S = 300  # the default sizes are planned again after this, for the machine's load then
SPEED_QUEUE = TurnQueue()


def speed_devices() -> list[str]:
    """The devices the Speed page can measure on: the CPU, and CUDA when a GPU is present."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def waiting(ahead: int) -> str:
    """The progress text while ``ahead`` measurements run or wait before this one."""
    others = "1 measurement is" if ahead == 1 else f"{ahead} measurements are"
    return f"{others} ahead of yours in the queue; each stops within {SPEED_BUDGET_S:.0f} s."


def in_turn(view, *args, on_progress=None):
    """``view(*args)``: a result measured before at once, otherwise in turn (``SPEED_QUEUE``), reporting the wait to
    ``on_progress`` twice a second, so a visitor who leaves stops waiting."""
    report = on_progress or (lambda done, total, label: None)
    hit = view.get(*args)
    if hit is not None:
        return hit
    with SPEED_QUEUE.turn(lambda ahead: report(0, 0, waiting(ahead))):
        return view(*args, on_progress=report)


def budget_note(view: SpeedView) -> str:
    """What the time budget left out of ``view``, in words; empty when it left out nothing."""
    notes = []
    if view.skipped_tokens:
        skipped = ", ".join(map(str, view.skipped_tokens))
        notes.append(f"T = {skipped} did not fit in the {SPEED_BUDGET_S:.0f} s this server gives one measurement")
    short = [f"T = {T}: {n}" for T, n in zip(view.num_tokens, view.rounds, strict=False) if n < view.sizes["repeats"]]
    if short:
        notes.append("fewer timing rounds ran (" + ", ".join(short) + ")")
    return ("; ".join(notes) + ". Lower b, d_model or T to measure more.") if notes else ""


@dataclass(frozen=True)
class SpeedPlan:
    """The default run's sizes, planned on this machine (``attention.plan_measurement``) with ``threads`` threads."""

    num_tokens: tuple[int, ...]
    predicted_s: float
    probe_ms: float
    next_tokens: int | None
    next_s: float
    threads: int
    cores: int
    load: float


def measuring_threads(cores: int, load: float) -> int:
    """Torch threads for a measurement: the cores other work leaves idle (``cores`` less the 1-minute ``load``
    average, rounded), at least one. A thread that waits for a busy core stalls the others at every operation: on
    2 cores at a load of 11, two threads made one call up to 100 times slower than one thread did."""
    return max(1, min(cores, int(cores - load + 0.5)))


@contextlib.contextmanager
def measuring_with_idle_cores() -> Iterator[tuple[int, float]]:
    """Within: torch uses ``measuring_threads`` threads (yielded, with the load average); after it, one again."""
    load = os.getloadavg()[0]
    threads = measuring_threads(machine_threads(), load)
    torch.set_num_threads(threads)
    try:
        yield threads, load
    finally:
        torch.set_num_threads(1)


@shared_view(max_entries=2)
def planned(candidates: tuple[int, ...], d_model: int, num_heads: int, batch_size: int, repeats: int, period: int):
    """``attention.plan_measurement`` on the CPU within ``SPEED_PLAN_S``; ``period`` (the time over ``PLAN_EVERY_S``)
    makes a plan last that long, then the next visitor plans again for the load then."""
    with measuring_with_idle_cores() as (threads, load):
        sizes = dict(d_model=d_model, num_heads=num_heads, batch_size=batch_size, repeats=repeats)
        plan = attention.plan_measurement(list(attention.IMPLEMENTATIONS), candidates, **sizes, target_s=SPEED_PLAN_S)
    return SpeedPlan(**asdict(plan), threads=threads, cores=machine_threads(), load=load)


def default_plan(candidates, d_model, num_heads, batch_size, repeats) -> SpeedPlan:
    """``planned`` for now: planned again every ``PLAN_EVERY_S``."""
    return planned(tuple(candidates), d_model, num_heads, batch_size, repeats, int(time.time() // PLAN_EVERY_S))


@shared_view(max_entries=SPEED_ENTRIES)
def measured(
    num_tokens: tuple[int, ...],
    d_model: int,
    num_heads: int,
    batch_size: int,
    repeats: int,
    device: str,
    *,
    on_progress=None,
) -> SpeedView:
    """Every implementation's median time and peak memory against T (``attention.measure``) within
    ``SPEED_BUDGET_S``, with ``measuring_threads``, reporting to ``on_progress(done, total, label)``; call it through
    ``speed_view``."""
    with measuring_with_idle_cores() as (threads, load):
        sizes = dict(d_model=d_model, num_heads=num_heads, batch_size=batch_size, repeats=repeats, device=device)
        result = attention.measure(
            list(attention.IMPLEMENTATIONS), num_tokens, **sizes, on_progress=on_progress, time_budget_s=SPEED_BUDGET_S
        )
    names = result.implementations
    cpu = f"cpu, {threads} of {machine_threads()} threads" if threads < machine_threads() else f"cpu, {threads} threads"
    return SpeedView(
        implementations=tuple(names),
        num_tokens=np.array(result.num_tokens),
        time_ms={name: np.array(result.time_ms[name]) for name in names},
        peak_memory_mib={name: np.array(result.peak_memory_mib[name]) for name in names},
        time_growth={name: result.time_growth(name) for name in names},
        memory_growth={name: result.memory_growth(name) for name in names},
        max_abs_difference=dict(result.max_abs_difference),
        one_weights_mib=np.array(
            [attention.expected_attention_bytes(batch_size, num_heads, t) / 2**20 for t in result.num_tokens]
        ),
        sizes={"b": batch_size, "d_model": d_model, "num_heads": num_heads, "repeats": repeats},
        device=result.device if result.device != "cpu" else cpu,
        rounds=result.rounds,
        skipped_tokens=result.skipped_tokens,
        threads=threads,
        load=load,
    )


speed_view = functools.partial(in_turn, measured)  # (*sizes, on_progress=None) → SpeedView, in turn
