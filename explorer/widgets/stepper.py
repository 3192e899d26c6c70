"""A page's steps and the stepper: Previous and Next (the ← and → keys, and a presentation clicker's PageUp and
PageDown), the step's title and progress, and the step's name kept in the URL. A student who follows a live room
gets the title and progress alone: the teacher moves their steps.

A page writes one function per step, named for what it shows, and adds it to its ``Steps`` in order::

    steps = widgets.Steps("dropout")

    @steps.add("One dropout draw")
    def one_draw():
        ...

    steps.show()  # the stepper, then the chosen step's function

The URL names the step by its function (``?step=one-draw``); a link made before steps had names
(``?step=2``) opens the step it opened then (``NUMBERED``)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import streamlit as st

from explorer import room
from explorer.session import CELL_PANELS_SHOWN, RUN_CELLS, RUN_STEP, initial_param, notice, step_key
from explorer.settings import parse_position, quoted

# display: none takes the clicker buttons out of the layout, the tab order and the accessibility
# tree, so screen readers do not read them; their keyboard shortcuts still work.
CLICKER_CSS = """<style>
[class*="st-key-clicker_"] {display: none;}
</style>"""


# Links made before steps had names said ?step=N. These are the steps each N opened then (2026-12), so such a
# link opens the same step after steps are added or moved. Never change them; a renamed step needs its old
# name here too (``tests/test_steps.py`` checks that each is still a step of its page).
NUMBERED = {
    "tokens": ("token-ids", "embeddings"),
    "simplified": (
        "one-query-scores",
        "scores-to-weights",
        "why-torch-softmax",
        "context-vector",
        "all-scores-and-weights",
        "all-context-vectors",
    ),
    "qkv": (
        "projection-weights",
        "queries-keys-values",
        "scaled-scores",
        "weights-and-context",
        "saturation",
        "gradients",
        "v1-equals-v2",
    ),
    "causal_mask": (
        "unmasked-weights",
        "the-mask",
        "zero-and-renormalize",
        "scores-with-minus-infinity",
        "two-routes",
        "context-vectors",
    ),
    "dropout": ("demo-on-ones", "one-draw", "survivors", "row-sums", "many-draws", "mean-vs-weights"),
    "batches": ("stack-into-batch", "mask-slice", "item-weights", "context-vectors"),
    "multihead": (
        "several-heads",
        "one-head",
        "concatenate",
        "split-into-heads",
        "all-heads-at-once",
        "merge-and-out-proj",
        "same-output",
        "what-heads-look-at",
        "every-head",
    ),
    "mistakes": ("changed-line", "right-beside-wrong", "what-it-costs", "against-d-k"),
    "why_attention": (
        "encoder-reads",
        "one-vector",
        "bahdanau-looks-back",
        "what-each-sees",
        "trained-alignment",
        "trained-bottleneck",
        "to-self-attention",
    ),
    "generate": (
        "prompt-and-settings",
        "token-by-token",
        "kv-cache",
        "cost-per-token",
        "smaller-caches",
        "sliding-window",
    ),
    "speed": ("implementations", "time", "memory", "why"),
}


@dataclass(frozen=True)
class Step:
    """One step of a page: its title in the stepper and the function that draws it."""

    title: str
    show: Callable[[], None]

    @property
    def slug(self) -> str:
        """The step's name in the URL: its function's name with hyphens (``one_draw`` → ``one-draw``)."""
        return self.show.__name__.strip("_").replace("_", "-")


class Steps:
    """A page's steps in the order the page adds them (``add``); ``show`` draws the stepper and runs the step
    the learner is on."""

    def __init__(self, page: str):
        self.page = page
        self.steps: list[Step] = []

    def add(self, title: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
        """A decorator: the function is the page's next step, titled ``title``."""

        def added(show: Callable[[], None]) -> Callable[[], None]:
            step = Step(title, show)
            if any(s.slug == step.slug for s in self.steps):
                raise ValueError(f"{self.page} has two steps named {step.slug}")
            self.steps.append(step)
            return show

        return added

    @property
    def slugs(self) -> tuple[str, ...]:
        return tuple(s.slug for s in self.steps)

    def show(self) -> Step:
        """The stepper, then the chosen step's function. A step that draws a chart with cells to explain must
        show the cell panel (``explain_cell``) after its last such chart: a step that does not fails here."""
        index = stepper(self.page, [s.title for s in self.steps], self.slugs, NUMBERED.get(self.page, ()))
        step = self.steps[index]
        step.show()
        drawn, shown = len(st.session_state.get(RUN_CELLS, ())), st.session_state.get(CELL_PANELS_SHOWN, 0)
        if drawn != shown:
            raise RuntimeError(
                f"{self.page}'s step {step.slug} drew {drawn} explainable charts, but its cell panel "
                f"(widgets.explain_cell) came after {shown} of them"
            )
        return step


def step_index(linked: str | None, slugs: Sequence[str] | None, count: int, numbered: Sequence[str] = ()) -> int | None:
    """The step a link names: a step's name (``slugs``) or, as links made before steps had names, a number
    counted from 1: the step ``numbered`` says it opened then, else that position (clamped to the page's
    steps). None when it names neither."""
    if linked is None:
        return None
    if slugs and linked in slugs:
        return slugs.index(linked)
    number = parse_position(linked)
    if number is None:
        return None
    if slugs and 1 <= number <= len(numbered) and numbered[number - 1] in slugs:
        return slugs.index(numbered[number - 1])
    return min(max(number - 1, 0), count - 1)


def stepper(page: str, steps: Sequence[str], slugs: Sequence[str] | None = None, numbered: Sequence[str] = ()) -> int:
    """Previous / Next buttons and a step indicator; returns the step index. ``slugs`` name the steps in
    the URL (default: their numbers from 1); ``numbered``: the steps old numbered links opened (``NUMBERED``).

    The ← and → keys press Previous and Next; PageUp and PageDown, which
    presentation clickers send, do the same.
    """
    key = step_key(page)
    if key not in st.session_state:
        linked = initial_param("step", page, key)
        start = step_index(linked, slugs, len(steps), numbered)
        if linked is not None and start is None:
            named = f"{', '.join(slugs)} or a number" if slugs else "a step number"
            notice(f"step={quoted(linked)} in the link is not a step of this page ({named}); starting at step 1.")
        st.session_state[key] = start or 0
    st.session_state[key] = min(max(st.session_state[key], 0), len(steps) - 1)

    def move(delta: int) -> None:
        st.session_state[key] = min(max(st.session_state[key] + delta, 0), len(steps) - 1)

    index = st.session_state[key]
    previous, middle, following = st.columns([1, 4, 1], vertical_alignment="center")
    if not room.following():  # a student who follows the room gets the teacher's steps, and no buttons or keys
        _buttons(page, index, len(steps), move, previous, following)
    middle.markdown(
        f"<div style='text-align:center'><b>Step {index + 1} of {len(steps)}</b> · {html.escape(steps[index])}</div>",
        unsafe_allow_html=True,
    )
    middle.progress((index + 1) / len(steps))
    slug = slugs[index] if slugs else str(index + 1)
    st.session_state[RUN_STEP] = (page, index, steps[index], slug)  # the link's step (``finish_run``), file names
    return index


def _buttons(page: str, index: int, count: int, move, previous, following) -> None:
    """Previous and Next in their columns, with their keys, and the clicker's two hidden buttons."""
    # No arrow icons: Streamlit already shows each shortcut (← and →) beside the label.
    previous.button(
        "Previous",
        key=f"prev:{page}",
        on_click=move,
        args=(-1,),
        disabled=index == 0,
        shortcut="Left",
        width="stretch",
    )
    following.button(
        "Next",
        key=f"next:{page}",
        on_click=move,
        args=(1,),
        disabled=index == count - 1,
        shortcut="Right",
        width="stretch",
        type="primary",
    )
    # Presentation clickers send PageDown/PageUp: two more shortcuts, on buttons kept off screen.
    st.html(CLICKER_CSS)
    for name, delta, shortcut in (("clicker_next", 1, "PageDown"), ("clicker_prev", -1, "PageUp")):
        st.button(f"{name} {page}", key=f"{name}_{page}", on_click=move, args=(delta,), shortcut=shortcut)
