"""Book mode: which of chapter 3's printed numbers a page shows, and with which seed it builds its module.

The chapter changes seeds as it goes (``attention.book``): ``SelfAttention_v1`` after
``torch.manual_seed(123)``, ``SelfAttention_v2`` after ``torch.manual_seed(789)`` (reused by
the causal-mask section), dropout drawn after ``torch.manual_seed(123)``, and the batched
classes after ``torch.manual_seed(123)`` again. The sidebar has one seed, so its default,
123, stands for "the book's seeds": each page then builds its module with the seed the book
uses at that point. Any other seed is used as it is, on every page.

The sidebar's dropout defaults to off (p = 0, eval mode), which is what the book uses for
every printed output but one: section 3.5.2 drops weights with p = 0.5 in training mode. While
the sidebar's dropout is untouched, the Dropout page uses the book's p = 0.5 in training mode;
once the user changes p or the mode, it follows the sidebar.

``is_book`` says whether a section's numbers on screen are the book's, and ``note`` says so in a
sentence, naming the section, or names what departs from the book; ``widgets.book_caption`` shows it.
Each is pure in the frozen settings and cached, so a rerun recomputes nothing."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from attention.constants import BOOK_SECTIONS as SECTIONS
from attention.constants import BOOK_SEEDS
from explorer.settings import BOOK, DEFAULTS, Settings

BOOK_NUM_TOKENS = 6  # the book's example: "Your journey starts with one step", six 3-d vectors
BOOK_DROPOUT = 0.5  # section 3.5.2's Dropout(0.5), in training mode
BOOK_DRAW_SEED = BOOK_SEEDS["dropout"]  # section 3.5.2's torch.manual_seed before the dropout draws


@dataclass(frozen=True)
class Setup:
    """What the book used for one section's printed numbers."""

    seed: int | None = None  # torch.manual_seed before the module is built; None: no module
    d_out: int | None = None  # None: the section's numbers do not depend on it
    num_heads: int | None = None
    dropout: bool = False  # True: the module's dropout matters (the book's output has none)


TITLES = {
    **SECTIONS,
    "one_query": "3.3.1 A simple self-attention mechanism without trainable weights",
    "qkv_steps": f"3.4.1 Computing the attention weights step by step (seed {BOOK_SEEDS['qkv_steps']})",
}
SETUPS = {
    "one_query": Setup(),
    "simplified": Setup(),
    "qkv_steps": Setup(seed=BOOK_SEEDS["qkv_steps"], d_out=2),
    "v1": Setup(seed=BOOK_SEEDS["v1"], d_out=2),
    "v2": Setup(seed=BOOK_SEEDS["v2"], d_out=2),
    "causal": Setup(seed=BOOK_SEEDS["causal"], d_out=2),
    "dropout": Setup(seed=BOOK_SEEDS["causal"], d_out=2),  # the causal weights of section 3.5.1's SelfAttention_v2
    "causal_class": Setup(seed=BOOK_SEEDS["causal_class"], d_out=2, dropout=True),
    "wrapper": Setup(seed=BOOK_SEEDS["wrapper"], d_out=2, num_heads=2, dropout=True),
    "multihead": Setup(seed=BOOK_SEEDS["multihead"], d_out=2, num_heads=2, dropout=True),
}


@functools.lru_cache(maxsize=4096)  # pure in frozen settings: a rerun recomputes nothing
def module_seed(settings: Settings, section: str) -> int:
    """The seed a page builds its module with: the book's for ``section`` while the sidebar's seed
    is the default, else the sidebar's."""
    book_seed = SETUPS[section].seed
    if settings.seed == DEFAULTS.seed and book_seed is not None:
        return book_seed
    return settings.seed


@functools.lru_cache(maxsize=4096)  # pure in frozen settings: a rerun recomputes nothing
def dropout_untouched(settings: Settings) -> bool:
    """Whether the sidebar's dropout p and mode are still their defaults (off)."""
    return settings.dropout == DEFAULTS.dropout and settings.training == DEFAULTS.training


@functools.lru_cache(maxsize=4096)  # pure in frozen settings: a rerun recomputes nothing
def dropout_settings(settings: Settings) -> Settings:
    """The Dropout page's settings: the book's p = 0.5 in training mode while the sidebar's dropout
    is untouched, else the sidebar's own."""
    if dropout_untouched(settings):
        return replace(settings, dropout=BOOK_DROPOUT, training=True)
    return settings


@functools.lru_cache(maxsize=4096)  # pure in frozen settings: a rerun recomputes nothing
def departures(settings: Settings, section: str) -> tuple[str, ...]:
    """What in ``settings`` makes ``section``'s numbers differ from the book's, in words (empty: none)."""
    setup, reasons = SETUPS[section], []
    if settings.weights != "random":
        return (f"{settings.weights} weight matrices of layer {settings.layer}, not the chapter's random ones",)
    if settings.source != BOOK:
        reasons.append("your own sentence, not the book's six 3-d vectors")
    elif settings.context_length < BOOK_NUM_TOKENS:
        reasons.append(f"context_length {settings.context_length} cuts the book's six tokens")
    if setup.d_out is not None and settings.d_out != setup.d_out:
        reasons.append(f"d_out is {settings.d_out}, not {setup.d_out}")
    if setup.num_heads is not None and settings.num_heads != setup.num_heads:
        reasons.append(f"num_heads is {settings.num_heads}, not {setup.num_heads}")
    if section == "dropout":
        used = dropout_settings(settings)
        if settings.seed != BOOK_DRAW_SEED:
            reasons.append(f"seed {settings.seed}, not 789 for the weight matrices and {BOOK_DRAW_SEED} for the draws")
        if used.dropout != BOOK_DROPOUT or not used.training:
            mode = "training" if used.training else "eval"
            reasons.append(f"dropout p {used.dropout:g} in {mode} mode, not {BOOK_DROPOUT} in training mode")
        return reasons
    if setup.seed is not None and module_seed(settings, section) != setup.seed:
        reasons.append(f"seed {settings.seed}, not {setup.seed}")
    if setup.dropout and settings.training and settings.dropout > 0:
        reasons.append(f"dropout is on (p {settings.dropout:g}, training mode), and the book's output has none")
    return tuple(reasons)


@functools.lru_cache(maxsize=4096)  # pure in frozen settings: a rerun recomputes nothing
def is_book(settings: Settings, section: str | None = None) -> bool:
    """Whether ``section``'s numbers on screen are the ones the book prints.

    Without ``section``: whether the settings are book mode, the book's preset with the default
    settings, in which every page shows the book's numbers.
    """
    sections = SETUPS if section is None else (section,)
    return not any(departures(settings, name) for name in sections)


# What a section prints of its numbers, where that is not the numbers themselves.
PRINTED = {
    "causal_class": "Section 3.5.3 prints only their shape; section 3.6.1 prints them as the wrapper output's first "
    "two columns.",
}


def note(settings: Settings, section: str, *, also: Sequence[str] = ()) -> str:
    """Sentences saying whether ``section``'s numbers are the book's; ``also`` adds a page's own departures."""
    return note_of(settings, section, tuple(also))


@functools.lru_cache(maxsize=256)
def note_of(settings: Settings, section: str, also: tuple[str, ...]) -> str:
    """``note``, made once per settings, section and departures (a page's rerun writes the same caption)."""
    reasons = [*departures(settings, section), *also]
    printed = f" {PRINTED[section]}" if section in PRINTED else ""
    if not reasons:
        return f"These are the book's numbers: section {TITLES[section]}.{printed}"
    more = f" Also: {'; '.join(reasons[1:])}." if len(reasons) > 1 else ""
    return (
        f"These are no longer the book's numbers: {reasons[0]}.{more} The app's defaults reproduce section "
        f"{TITLES[section]}.{printed}"
    )
