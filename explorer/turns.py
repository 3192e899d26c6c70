"""Taking turns with large work: a view's memory budget before it is computed, and heavy pages
drawn a few at a time, first come first served, with a notice that says so (``budget``)."""

from __future__ import annotations

import contextlib
import functools
from dataclasses import replace

import streamlit as st

from . import budget, state
from .caching import VIEW_ENTRIES, shared_view
from .inputs import prepare, prepared
from .settings import TEXT, Settings


def _num_tokens(settings: Settings, second_text: str | None = None) -> int:
    count = len(prepared(settings).ids)
    if second_text and second_text.strip():
        second = prepare(TEXT, second_text, settings.effective_d_in, settings.seed, settings.context_length)
        count = max(count, len(second.ids))
    return count


def _estimate(kind: str, settings: Settings, *args) -> budget.Estimate:
    num_tokens = _num_tokens(settings, *args[:1]) if kind == "batch" else _num_tokens(settings)
    dropout = settings.training and settings.dropout > 0
    d_in, d_out, heads, ctx = settings.effective_d_in, settings.d_out, settings.num_heads, settings.context_length
    return budget.estimate(kind, num_tokens, d_in, d_out, heads, ctx, dropout)


def _heavy_turn(kind: str):
    """``shared_view``'s ``on_miss`` for view ``kind``: a heavy view waits for a place in
    ``budget.HEAVY_TURNS``, saying so, and gives its memory back when done."""

    @contextlib.contextmanager
    def turn(settings: Settings, *args, **kwargs):
        if _estimate(kind, settings, *args).peak <= budget.HEAVY_BYTES:
            yield
            return
        waiting = st.empty()

        def on_wait(ahead: int) -> None:
            waiting.info(
                f"Waiting for the server: {ahead} large computations are running or waiting before yours "
                f"(it runs {budget.HEAVY_SLOTS} at once).",
                icon=":material/hourglass_top:",
            )

        try:
            with budget.HEAVY_TURNS.turn(on_wait):
                waiting.empty()
                with st.spinner("Computing a large view…"):
                    yield
        finally:
            budget.release_memory()

    return turn


HEAVY_TOKENS = 256  # a page of this many tokens or more is drawn in turn (``page_turn``)


def heavy_page(settings: Settings) -> bool:
    """Whether drawing a page for ``settings`` is heavy work: many tokens, or a large multi-head view."""
    try:
        num_tokens = _num_tokens(settings)
    except ValueError:
        return False
    if num_tokens >= HEAVY_TOKENS:
        return True
    return _estimate("multihead", settings).peak > budget.HEAVY_BYTES


def page_turn(settings: Settings, url_path: str):
    """A context manager for drawing one page: a heavy page (``heavy_page``) waits for a place among
    ``budget.HEAVY_SLOTS`` heavy page runs, first come first served, with a notice that says so.

    Streamlit runs every session's script on its own thread, and Python runs one thread at a time:
    20 sessions re-running a heavy page shared the interpreter with a student on a light page, whose
    reruns then took up to 9.6 s. Waiting here costs no CPU, and a light page never waits. A session
    runs one script at a time, so it holds one place at most; while it waits, a newer rerun of the
    same session replaces the waiting one (Streamlit stops a run at its next drawing call).
    """
    if url_path == "speed" or not heavy_page(settings):  # the Speed page has its own queue (``timing``)
        return contextlib.nullcontext()
    waiting = st.empty()

    def on_wait(ahead: int) -> None:
        waiting.info(
            f"Waiting for the server: {ahead} large pages are being drawn or waiting before yours "
            f"(it draws {budget.HEAVY_SLOTS} at once).",
            icon=":material/hourglass_top:",
        )

    @contextlib.contextmanager
    def turn():
        with budget.HEAVY_PAGES.turn(on_wait):
            waiting.empty()
            yield

    return turn()


def budgeted(kind: str):
    """Keep view ``kind`` within ``budget.VIEW_BUDGET``: compute only the first tokens that fit, with a
    notice naming the setting to lower, or refuse (``ValueError``); heavy views take turns."""

    def decorate(view):
        cached = shared_view(max_entries=VIEW_ENTRIES, on_miss=_heavy_turn(kind))(view)

        @functools.wraps(view)
        def planned(settings: Settings, *args, **kwargs):
            num_tokens = _num_tokens(settings, *args[:1]) if kind == "batch" else _num_tokens(settings)
            dropout = settings.training and settings.dropout > 0
            d_in, d_out, heads, ctx = (
                settings.effective_d_in,
                settings.d_out,
                settings.num_heads,
                settings.context_length,
            )
            plan = budget.plan(kind, num_tokens, d_in, d_out, heads, ctx, dropout)
            if plan.lowered:
                state.notice(plan.note)
                settings = replace(settings, context_length=plan.num_tokens)
            return cached(settings, *args, **kwargs)

        planned.clear = cached.clear
        return planned

    return decorate
