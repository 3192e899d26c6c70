"""``explorer.runtime.memory``: the budget's estimates against measured sizes, plans that lower or refuse, turns,
the byte-bounded cache."""

import dataclasses
import threading
import time

import pytest

import attention
from explorer import models, views
from explorer.runtime import memory
from explorer.settings import DEFAULTS, TEXT
from explorer.views import chapter

SENTENCE = " ".join(f"w{k}" for k in range(40))  # 40 tokens or more with GPT-2's BPE


def settings_for(d_in=16, d_out=12, num_heads=3, training=False, text=SENTENCE, context_length=64, **changes):
    return dataclasses.replace(
        DEFAULTS,
        source=TEXT,
        text=text,
        d_in=d_in,
        d_out=d_out,
        num_heads=num_heads,
        context_length=context_length,
        dropout=0.5 if training else 0.0,
        training=training,
        seed=11,
        **changes,
    )


@pytest.mark.parametrize("name", list(models.MODULES))
@pytest.mark.parametrize(("d_in", "d_out", "heads", "ctx"), [(3, 2, 2, 6), (16, 12, 3, 64), (64, 32, 4, 200)])
def test_module_bytes_are_the_modules_parameters_and_buffers(name, d_in, d_out, heads, ctx):
    module = getattr(attention, name)
    args = (d_in, d_out) if name.startswith("SelfAttention") else (d_in, d_out, ctx, 0.0)
    built = module(*args, num_heads=heads) if name.startswith("MultiHead") else module(*args)
    assert memory.module_bytes(name, d_in, d_out, heads, ctx) == memory.size_of(built)


VIEWS = {
    "multihead": lambda s: chapter.multihead_view(s),
    "trace": lambda s: chapter.module_trace(s, "CausalAttention"),
    "mask": lambda s: chapter.mask_view(s),
    "dropout": lambda s: chapter.dropout_view(s, 10),
    "batch": lambda s: chapter.batch_view(s, None),
    "simplified": lambda s: chapter.simplified_view(s, 1),
    "qkv": lambda s: chapter.qkv_view(s),
}


@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize(
    "settings",
    [settings_for(), settings_for(d_in=48, d_out=64, num_heads=8, training=True), settings_for(d_out=8, num_heads=1)],
    ids=["small", "wide-training", "one-head"],
)
def test_estimates_match_the_measured_size_of_each_view(kind, settings):
    """The estimate of what a view keeps is within 25 % of the bytes its cached result really holds,
    and the peak estimate is at least that."""
    num_tokens = len(models.prepared(settings).ids)
    dropout = settings.training and settings.dropout > 0
    shape = (settings.d_in, settings.d_out, settings.num_heads, settings.context_length)
    estimate = memory.estimate(kind, num_tokens, *shape, dropout)
    measured = memory.size_of(VIEWS[kind](settings))
    assert 0.75 * measured <= estimate.result <= 1.25 * measured, (estimate.result, measured)
    assert estimate.peak >= estimate.result


def test_the_worst_link_is_lowered_to_the_tokens_that_fit():
    plan = memory.plan("multihead", 1024, 1024, 1024, 16, 1024, dropout=True)
    assert plan.lowered and memory.MIN_TOKENS <= plan.num_tokens < 1024
    assert plan.estimate.peak <= memory.VIEW_BUDGET
    assert memory.estimate("multihead", plan.num_tokens + 1, 1024, 1024, 16, plan.num_tokens + 1, True).peak > (
        memory.VIEW_BUDGET
    )
    assert "lower num_heads, d_in or d_out, or turn training mode off" in plan.note


def test_settings_that_fit_are_computed_whole():
    plan = memory.plan("multihead", 1024, 64, 64, 4, 1024, dropout=False)
    assert (plan.num_tokens, plan.lowered, plan.note) == (1024, False, "")


def test_weights_too_large_for_any_tokens_are_refused_naming_the_setting():
    with pytest.raises(ValueError, match="lower num_heads, d_in or d_out"):
        memory.plan("multihead", 1024, 1024, 1024, 16, 1024, dropout=True, budget=100 * memory.MIB)


def test_a_lowered_view_computes_the_first_tokens_and_says_so(monkeypatch):
    notes = []
    monkeypatch.setattr(views.st, "info", notes.append)
    settings = settings_for(d_in=64, d_out=64, num_heads=16)
    num_tokens = len(models.prepared(settings).ids)
    tight = memory.estimate("multihead", num_tokens - 10, 64, 64, 16, num_tokens - 10, False).peak
    monkeypatch.setattr(memory, "VIEW_BUDGET", tight)
    monkeypatch.setattr(memory.plan.__wrapped__, "__defaults__", (tight,))
    memory.plan.cache_clear()  # plans are cached: forget those made with the real budget
    view = chapter.multihead_view(settings)
    assert len(view.pieces) == num_tokens - 10 and view.wrapper_weights.shape[1] == num_tokens - 10
    assert len(notes) == 1 and f"first {num_tokens - 10}" in notes[0]


def test_heavy_turns_let_two_run_and_the_rest_wait_in_order():
    turns = memory.TurnQueue(2)
    order, running, peak = [], [0], [0]
    lock = threading.Lock()

    def work(name):
        with turns.turn():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
                order.append(name)
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    waiters = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    with turns.turn(), turns.turn():  # both places held while the others queue
        for thread in waiters:
            thread.start()
            time.sleep(0.05)  # arrive in order
        assert len(turns) == 6 and order == []
    for thread in waiters:
        thread.join()
    assert peak[0] == 2 and order[:2] in ([0, 1], [1, 0]) and sorted(order[2:]) == [2, 3]


def test_a_waiter_that_gives_up_leaves_the_queue():
    turns = memory.TurnQueue(1)
    seen = []

    def leave(ahead):
        seen.append(ahead)
        raise RuntimeError("rerun")

    with turns.turn():
        with pytest.raises(RuntimeError), turns.turn(leave):
            pass
        assert len(turns) == 1
    assert seen == [1]


def test_the_shared_cache_is_bounded_by_bytes_entries_and_age(monkeypatch):
    import numpy as np

    cache = memory.SharedCache(max_bytes=3000, entry_bytes=1500, ttl_s=60)
    kept = cache.put(("f", 1), np.zeros(1000, dtype=np.uint8), max_entries=8)
    assert kept and cache.bytes == 1000
    assert not cache.put(("f", 2), np.zeros(2000, dtype=np.uint8), max_entries=8)  # larger than entry_bytes
    cache.put(("f", 3), np.zeros(1400, dtype=np.uint8), max_entries=8)
    cache.put(("f", 4), np.zeros(1400, dtype=np.uint8), max_entries=8)  # the oldest goes to stay within 3000
    assert cache.get(("f", 1)) is None and cache.bytes == 2800
    cache.put(("g", 1), np.zeros(10, dtype=np.uint8), max_entries=1)
    cache.put(("g", 2), np.zeros(10, dtype=np.uint8), max_entries=1)  # one entry for g
    assert cache.get(("g", 1)) is None and cache.get(("g", 2)) is not None
    now = time.monotonic()
    monkeypatch.setattr(memory.time, "monotonic", lambda: now + 61)
    assert cache.bytes == 0 and len(cache) == 0


def test_size_of_counts_a_shared_block_once():
    import numpy as np
    import torch

    tensor = torch.zeros(256)  # 1 KiB
    views = (tensor.numpy()[:10], tensor.numpy()[10:], tensor)
    assert memory.size_of(views) == 1024
    assert memory.size_of({"a": np.zeros(8), "b": [np.zeros(8)]}) == 128


def test_only_pages_with_many_tokens_or_a_large_view_take_turns():
    assert not views.Run.of(DEFAULTS).heavy
    assert not views.Run.of(settings_for()).heavy
    assert views.Run.of(settings_for(text=" ".join(["word"] * 400), context_length=1024)).heavy
    assert views.Run.of(settings_for(d_in=1024, d_out=1024, num_heads=16, training=True)).heavy
