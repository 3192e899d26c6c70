"""Measuring what the KV cache saves: time per new token against the text's length.

``measure_token_times`` times one generation step of a ``gpt.GPTModel`` at
several lengths T, with the cache (one new token through the model, attending
over T - 1 cached tokens) and without it (all T tokens again, as chapter 4's
``generate_text_simple`` does). Both are timed side by side in one run: each
round times every length both ways, in an order shuffled with a fixed seed, so
that load from other processes slows both alike; the median over rounds is
kept. The caches are filled before timing and not timed. The load average
(``os.getloadavg``) before and after is recorded, because on a shared machine
it says how far to trust the times.

What to expect: with the cache, a step does the same matrix products at every
length except the attention over the cache, which is small next to the
projections, the feed-forward layers and the output head, so its time hardly
grows; without the cache, every product grows with T.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from dataclasses import dataclass

import torch

from ..after_chapter.generation import GPTWithCache, step_without_cache
from ..after_chapter.gpt import GPTModel

LENGTHS = tuple(range(10, 121, 10))
SEED = 123
MAX_REPEATS = 50


@dataclass(frozen=True)
class TokenTimes:
    """Median seconds for one new token at each length, with and without the cache."""

    lengths: tuple[int, ...]
    with_cache_s: tuple[float, ...]
    without_cache_s: tuple[float, ...]
    repeats: int
    threads: int  # torch.get_num_threads() while measuring
    load_before: tuple[float, float, float]  # os.getloadavg(): 1, 5 and 15 minutes
    load_after: tuple[float, float, float]

    @property
    def growth_with_cache(self) -> float:
        """Time per token at the longest length over time at the shortest, with the cache."""
        return self.with_cache_s[-1] / self.with_cache_s[0]

    @property
    def growth_without_cache(self) -> float:
        return self.without_cache_s[-1] / self.without_cache_s[0]

    def table(self) -> str:
        """The times as a plain-text table, in milliseconds."""
        lines = ["tokens  with cache (ms)  without cache (ms)"]
        for length, cached, uncached in zip(self.lengths, self.with_cache_s, self.without_cache_s, strict=True):
            lines.append(f"{length:6d}  {cached * 1e3:15.2f}  {uncached * 1e3:18.2f}")
        lines.append(
            f"growth {self.lengths[0]} -> {self.lengths[-1]}: with cache {self.growth_with_cache:.2f}x, "
            f"without {self.growth_without_cache:.2f}x; {self.repeats} rounds, {self.threads} thread(s), "
            f"load average {self.load_before[0]:.2f} before, {self.load_after[0]:.2f} after"
        )
        return "\n".join(lines)


def measure_token_times(model: GPTModel, lengths=LENGTHS, repeats: int = 5, seed: int = SEED) -> TokenTimes:
    """Time one new token at each of ``lengths`` with and without the cache; random token ids from ``seed``.

    Raises a ``ValueError`` for lengths outside 2 .. the model's context_length.
    """
    lengths = tuple(lengths)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) for n in lengths):
        raise ValueError("lengths must be whole numbers of tokens.")
    if min(lengths) < 2 or max(lengths) > model.cfg.context_length:
        raise ValueError(f"lengths must lie between 2 and the model's context_length, {model.cfg.context_length}.")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be a whole number from 1 to {MAX_REPEATS}, got {repeats!r}.")
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(model.cfg.vocab_size, (1, max(lengths)), generator=generator)  # (1, max_length)
    was_training = model.training
    model.eval()
    load_before = os.getloadavg()
    times = {(length, cached): [] for length in lengths for cached in (True, False)}
    try:
        with torch.no_grad():
            cached_model = GPTWithCache(model)
            caches = {n: cached_model.step(ids[:, : n - 1]).caches for n in lengths}  # T - 1 tokens each, untimed
            calls = {
                **{(n, True): (lambda n=n: cached_model.step(ids[:, n - 1 : n], caches[n])) for n in lengths},
                **{(n, False): (lambda n=n: step_without_cache(model, ids[:, :n])) for n in lengths},
            }
            order = list(calls)
            shuffle = random.Random(seed)  # noqa: S311  (an order to time in, not a secret)
            for call in calls.values():
                call()  # warm up each shape once
            for _ in range(repeats):
                shuffle.shuffle(order)
                for key in order:
                    start = time.perf_counter()
                    calls[key]()
                    times[key].append(time.perf_counter() - start)
    finally:
        model.train(was_training)
    return TokenTimes(
        lengths=lengths,
        with_cache_s=tuple(statistics.median(times[n, True]) for n in lengths),
        without_cache_s=tuple(statistics.median(times[n, False]) for n in lengths),
        repeats=repeats,
        threads=torch.get_num_threads(),
        load_before=load_before,
        load_after=os.getloadavg(),
    )
