"""The views layer: what a page computes, as frozen results shared read-only by every session, from the ``attention``
package through ``models``; ``chapter`` holds the chapter's pages' views, ``beyond`` (imported from its module, as it
imports torch) the later pages'. It may import ``models`` and ``runtime``, never ``session``, ``widgets`` or pages.

This module is one run's way through a view: a ``Run`` (the settings and the sentence prepared for them, made once per
script run), a memory budget planned from its token count (``budgeted``), and turns for heavy views and pages."""

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
    """The settings of one run and the sentence prepared for them, equal (and hashed) by the settings alone; or
    ``error``, the learner's message when it cannot be prepared, which a view raises as a ``ValueError``."""

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
    """Keep view ``kind`` (None: a small one, ``run_view``) within ``runtime.memory.VIEW_BUDGET``, planned from the
    run's token count: compute only the first tokens that fit, with a notice, or refuse; a heavy view takes its turn."""

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
    """A context manager for drawing one page: a heavy page waits for a place among ``HEAVY_SLOTS`` heavy page runs,
    with a notice. Python runs one thread at a time: 20 sessions re-running a heavy page made a student's light page
    take up to 9.6 s. Waiting costs no CPU, and a light page never waits."""
    if url_path == "speed" or not run.heavy:  # the Speed page has its own queue (``views.beyond``)
        return contextlib.nullcontext()
    ahead = f"large pages are being drawn or waiting before yours (it draws {HEAVY_SLOTS} at once)"
    return waiting_turn(HEAVY_PAGES, ahead)


# The chapter's views, re-exported for the pages, after the run's pieces above, which they import from here.
from explorer.views.chapter import (  # noqa: E402, F401
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
    near_even,
    qkv_view,
    scaling_view,
    seq2seq_parts,
    simplified_view,
    why_view,
)
