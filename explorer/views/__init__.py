"""The views layer: what a page computes, as frozen results (dataclasses beside each view) shared read-only by
every session. A view calls the ``attention`` package through ``models`` and draws nothing but a waiting notice.
``chapter`` holds the chapter's pages' views, in its order; ``beyond`` those of Break it, Generate and Speed, which
import torch: it is imported from its module, so the first page's run imports none.

It may import ``models``, ``runtime`` and the bottom modules, never ``session``, ``widgets`` or pages.

This module is one run's way through a view. A page's run starts from a ``Run``: the settings and the sentence prepared
for them (tokens and input vectors, or a trained layer's input), made once per script run by the session
(``session.current_run``) and passed down to every view, the exports and the link. A view (``budgeted``) plans its
memory from the run's token count, once: a view too large for a shared server computes only its first tokens, with a
notice naming the setting to lower, or is refused (``ValueError``). A heavy view waits for a place among ``HEAVY_SLOTS``
computations, and a page with many tokens for a place among as many page runs.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field, replace

import streamlit as st

from explorer.models import Prepared, prepare, prepared
from explorer.runtime.memory import (
    HEAVY_BYTES,
    HEAVY_SLOTS,
    VIEW_ENTRIES,
    TurnQueue,
    estimate,
    plan,
    release_memory,
    shared_view,
)
from explorer.settings import TEXT, Settings

HEAVY_TURNS = TurnQueue(HEAVY_SLOTS)  # heavy computations
HEAVY_PAGES = TurnQueue(HEAVY_SLOTS)  # page runs with many tokens or a large view (``page_turn``)
HEAVY_TOKENS = 256  # a page of this many tokens or more is drawn in turn (``page_turn``)


@dataclass(frozen=True)
class Run:
    """The settings of one run and the sentence prepared for them; equal (and hashed) by the settings alone.

    ``error`` is the learner's message when the sentence cannot be prepared (an empty sentence): a view
    then raises it as a ``ValueError``, which the page shows instead of its figures."""

    settings: Settings
    prepared: Prepared | None = field(default=None, compare=False, repr=False)
    error: str | None = field(default=None, compare=False)
    num_tokens: int = field(default=0, compare=False)

    @classmethod
    def of(cls, settings: Settings) -> Run:
        try:
            found = prepared(settings)
        except ValueError as error:
            return cls(settings, None, str(error))
        return cls(settings, found, None, len(found.ids))

    def but(self, **changes) -> Run:
        """This run with ``changes`` to its settings; the prepared sentence is kept when they leave it as it is."""
        settings = replace(self.settings, **changes)
        if set(changes) <= {"dropout", "training"}:  # the sentence and its input vectors do not depend on these
            return replace(self, settings=settings)
        return Run.of(settings)

    def ready(self) -> Prepared:
        """The prepared sentence, or the learner's message as a ``ValueError``."""
        if self.prepared is None:
            raise ValueError(self.error)
        return self.prepared

    @property
    def sizes(self) -> tuple:
        """What a view's memory depends on besides its token count: ``runtime.memory.estimate``'s arguments."""
        s = self.settings
        return s.effective_d_in, s.d_out, s.num_heads, s.context_length, s.training and s.dropout > 0

    @functools.cached_property
    def heavy(self) -> bool:
        """Whether drawing a page for this run is heavy work: many tokens, or a large multi-head view."""
        return self.num_tokens >= HEAVY_TOKENS or estimate("multihead", self.num_tokens, *self.sizes).peak > HEAVY_BYTES


@contextlib.contextmanager
def waiting_turn(queue: TurnQueue, ahead_text: str):
    """Wait for a place in ``queue``, first come first served, saying meanwhile how many are ``ahead_text``."""
    waiting = st.empty()

    def on_wait(ahead: int) -> None:
        waiting.info(f"Waiting for the server: {ahead} {ahead_text}.", icon=":material/hourglass_top:")

    with queue.turn(on_wait):
        waiting.empty()
        yield


@contextlib.contextmanager
def heavy_turn():
    """Wait, saying so, for a place among ``HEAVY_SLOTS`` heavy computations; give the memory back after."""
    ahead = f"large computations are running or waiting before yours (it runs {HEAVY_SLOTS} at once)"
    try:
        with waiting_turn(HEAVY_TURNS, ahead), st.spinner("Computing a large view…"):
            yield
    finally:
        release_memory()


def budgeted(kind: str | None):
    """Keep view ``kind`` within ``runtime.memory.VIEW_BUDGET``, planned once per call from the run's token
    count: compute only the first tokens that fit, with a notice, or refuse; a heavy view takes its turn.
    ``kind`` None: a view with a small result, which needs no budget (``run_view``)."""

    def decorate(view):
        cached = shared_view(max_entries=VIEW_ENTRIES)(view)

        @functools.wraps(view)
        def planned(run: Run | Settings, *args, **kwargs):
            if not isinstance(run, Run):  # a notebook or a test may pass settings
                run = Run.of(run)
            if kind is None:
                return cached(run, *args, **kwargs)
            run.ready()  # the learner's message as a ValueError when there is no sentence
            s, num_tokens = run.settings, run.num_tokens
            second = args[0] if kind == "batch" and args else None  # the batch view's second sentence
            if second and second.strip():
                second_ids = prepare(TEXT, second, s.effective_d_in, s.seed, s.context_length).ids
                num_tokens = max(num_tokens, len(second_ids))
            found = plan(kind, num_tokens, *run.sizes)
            if found.lowered:
                st.info(found.note)
                run = Run.of(replace(s, context_length=found.num_tokens))
            on_miss = heavy_turn if found.estimate.peak > HEAVY_BYTES else None
            return cached(run, *args, on_miss=on_miss, **kwargs)

        planned.clear = cached.clear
        return planned

    return decorate


run_view = budgeted(None)


def page_turn(run: Run, url_path: str):
    """A context manager for drawing one page: a heavy page (many tokens, or a large multi-head view) waits
    for a place among ``HEAVY_SLOTS`` heavy page runs, first come first served, with a notice.

    Streamlit runs every session's script on its own thread, and Python runs one thread at a time:
    20 sessions re-running a heavy page shared the interpreter with a student on a light page, whose
    reruns then took up to 9.6 s. Waiting here costs no CPU, and a light page never waits. A session
    runs one script at a time, so it holds one place at most; while it waits, a newer rerun of the
    same session replaces the waiting one (Streamlit stops a run at its next drawing call).
    """
    if url_path == "speed" or not run.heavy:  # the Speed page has its own queue (``views.beyond``)
        return contextlib.nullcontext()
    ahead = f"large pages are being drawn or waiting before yours (it draws {HEAVY_SLOTS} at once)"
    return waiting_turn(HEAVY_PAGES, ahead)


# The chapter's views, after the run's pieces above, which they import from here.
from explorer.views.chapter import (  # noqa: E402
    WHY_HIDDEN_SIZE,
    batch_view,
    computed_why_view,
    dropout_settings,
    dropout_view,
    heads_product_view,
    is_book,
    mask_view,
    module_seed,
    multihead_view,
    qkv_view,
    scaling_view,
    seq2seq_parts,
    simplified_view,
    why_view,
)

__all__ = [
    "WHY_HIDDEN_SIZE",
    "Run",
    "batch_view",
    "computed_why_view",
    "dropout_settings",
    "dropout_view",
    "heads_product_view",
    "is_book",
    "mask_view",
    "module_seed",
    "multihead_view",
    "page_turn",
    "qkv_view",
    "scaling_view",
    "seq2seq_parts",
    "simplified_view",
    "why_view",
]
