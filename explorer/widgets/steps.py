"""A page's steps and the stepper (Previous and Next, also by the ← and → keys and a clicker's PageUp and PageDown),
the "Show the code" panel (``show_code``), and the end of every run (``finish_run``): downloads and the link.

A page writes one function per step, named for what it shows, and adds it to its ``Steps`` in order::

    steps = widgets.Steps("dropout")

    @steps.add("One dropout draw", attention.apply_dropout)  # the title, then what "Show the code" shows
    def one_draw():
        ...

    steps.show()  # the stepper, then the chosen step's function and its code panel

The URL names the step by its function (``?step=one-draw``); an old numbered link (``?step=2``) opens the step it
opened then (``NUMBERED``). A student who follows a live room gets no buttons: the teacher moves their steps."""

from __future__ import annotations

import contextlib
import html
import inspect
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import streamlit as st

from attention.figures import JSON_NOTE, json_table, step_json
from explorer import room
from explorer.session import (
    LINK_SLOT,
    PRESENTER,
    SETTINGS,
    TOKEN_WINDOW,
    chosen,
    initial_param,
    notice,
    step_key,
    this_run,
    view_link,
)
from explorer.settings import MAX_URL_TEXT_CHARS, TEXT, parse_position, quoted
from explorer.views import Run
from explorer.views.chapter import is_book, source_of
from explorer.widgets import export_name
from explorer.widgets.charts import explain_cell

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
    """One step of a page: its title in the stepper, the function that draws it and what its code panel shows."""

    title: str
    show: Callable[[], None]
    code: tuple = ()

    @property
    def slug(self) -> str:
        """The step's name in the URL: its function's name with hyphens (``one_draw`` → ``one-draw``)."""
        return self.show.__name__.strip("_").replace("_", "-")


class Steps:
    """A page's steps in the order the page adds them (``add``); ``show`` draws the stepper and the step shown."""

    def __init__(self, page: str):
        self.page = page
        self.steps: list[Step] = []
        self.aside = None  # the step's column of words (``beside``), where its cell and code panels go

    def add(self, title: str, *code: Callable | type | str) -> Callable[[Callable[[], None]], Callable[[], None]]:
        """A decorator: the function is the page's next step, titled ``title``; ``code``, if any, is shown by
        "Show the code" after it (``show_code``)."""

        def added(show: Callable[[], None]) -> Callable[[], None]:
            step = Step(title, show, code)
            if any(s.slug == step.slug for s in self.steps):
                raise ValueError(f"{self.page} has two steps named {step.slug}")
            self.steps.append(step)
            return show

        return added

    def beside(self):
        """A column of words beside a wider one for the chart; the step's cell and code panels go under the words."""
        self.aside, plot = st.columns([1, 2], gap="medium")
        return self.aside, plot

    def show(self) -> Step:
        """The stepper, then the chosen step's function, then its cell panel (``explain_cell``) if it drew charts with
        cells to explain and did not place the panel itself, and its code panel. A panel placed before the step's
        last such chart fails here."""
        step = self.steps[stepper(self.page, self.steps)]
        self.aside = None
        step.show()
        drawn, shown = len(this_run().cells), this_run().cell_panels_shown
        if shown is not None and drawn != shown:
            raise RuntimeError(
                f"{self.page}'s step {step.slug} drew {drawn} explainable charts, but its cell panel "
                f"(widgets.explain_cell) came after {shown} of them"
            )
        with self.aside or contextlib.nullcontext():
            if drawn and shown is None:
                explain_cell()
            if step.code:
                show_code(*step.code)
        this_run().aside = self.aside  # the step's JSON download goes under its words (``finish_run``)
        return step


def step_index(linked: str | None, slugs: Sequence[str], count: int, numbered: Sequence[str] = ()) -> int | None:
    """The step a link names: a step's name (``slugs``), or a number from 1 as old links have it, meaning the step
    ``numbered`` says it opened then, else that position (clamped); None when it names neither."""
    if linked is None:
        return None
    if linked in slugs:
        return slugs.index(linked)
    number = parse_position(linked)
    if number is None:
        return None
    if 1 <= number <= len(numbered) and numbered[number - 1] in slugs:
        return slugs.index(numbered[number - 1])
    return min(max(number - 1, 0), count - 1)


def stepper(page: str, steps: Sequence[Step]) -> int:
    """Previous and Next buttons (the ← and → keys, a clicker's PageUp and PageDown) and the step; returns its index."""
    key, count = step_key(page), len(steps)
    if key not in st.session_state:
        linked, slugs = initial_param("step", page, key), [s.slug for s in steps]
        start = step_index(linked, slugs, count, NUMBERED.get(page, ()))
        if linked is not None and start is None:
            notice(
                f"step={quoted(linked)} in the link is not a step of this page ({', '.join(slugs)} or a number); "
                "starting at step 1."
            )
        st.session_state[key] = start or 0
    index = st.session_state[key] = min(max(st.session_state[key], 0), count - 1)
    step = steps[index]

    def move(delta: int) -> None:
        st.session_state[key] = min(max(st.session_state[key] + delta, 0), count - 1)

    previous, middle, following = st.columns([1, 4, 1], vertical_alignment="center")
    middle.markdown(
        f"<div style='text-align:center'><b>Step {index + 1} of {count}</b> · {html.escape(step.title)}</div>",
        unsafe_allow_html=True,
    )
    middle.progress((index + 1) / count)
    this_run().step = (page, index, step.title, step.slug)  # the link's step (``finish_run``)
    if room.following():  # a student who follows the room gets the teacher's steps, and no buttons or keys
        return index
    # No arrow icons: Streamlit already shows each shortcut (← and →) beside the label.
    for where, label, name, delta, shortcut, last in (
        (previous, "Previous", "prev", -1, "Left", 0),
        (following, "Next", "next", 1, "Right", count - 1),
    ):
        where.button(
            label,
            key=f"{name}:{page}",
            on_click=move,
            args=(delta,),
            disabled=index == last,
            shortcut=shortcut,
            width="stretch",
            type="primary" if delta > 0 else "secondary",
        )
    # Presentation clickers send PageDown/PageUp: two more shortcuts, on buttons hidden (``widgets.BASE_CSS``).
    for name, delta, shortcut in (("clicker_next", 1, "PageDown"), ("clicker_prev", -1, "PageUp")):
        st.button(f"{name} {page}", key=f"{name}_{page}", on_click=move, args=(delta,), shortcut=shortcut)
    return index


# The "Show the code" panel: the package source that computed what is on screen, read with ``inspect``.


STEPS_NOTE = (  # why a panel shows ``steps``, not the book's ``forward``, and each way the two differ
    ": the book's `forward` in the book's names, with an input check (`check_batch`) first. It returns every "
    "tensor it computed, so the page can draw them; `forward` returns `steps(x).output`."
)
DROPOUT_NOTE = (  # CausalAttention and MultiHeadAttention: what ``drop_with_mask`` stands for
    " Where the book writes `attn_weights = self.dropout(attn_weights)`, `steps` keeps both tensors: "
    "`drop_with_mask` returns the book's dropped weights, bit for bit, as `dropped_weights`, and which weights "
    "the draw kept. So it computes `dropped_weights @ values`."
)
OUT_PROJ_NOTE = (  # MultiHeadAttention: the book overwrites ``context_vec``
    " The book's `context_vec = self.out_proj(context_vec)` is `output = self.out_proj(context_vec)` here, so "
    "the heads' merged `context_vec` is kept too."
)
CACHED_STEPS_NOTE = (  # the same for the package's classes after the chapter, which the book does not have
    ": not in the book: the package's attention after chapter 3, its new lines marked `# New`, returning every "
    "tensor it computed. `forward` returns the output and the new cache."
)
CELL_MARK = "  # ◀ this cell"  # appended to the line that made the selected cell's matrix (``widgets.charts``)
BOOK_NOTES = {  # each of the chapter's classes: how its ``steps`` differs from the book's ``forward``
    "SelfAttention_v1": STEPS_NOTE,
    "SelfAttention_v2": STEPS_NOTE,
    "CausalAttention": STEPS_NOTE + DROPOUT_NOTE,
    "MultiHeadAttention": STEPS_NOTE + DROPOUT_NOTE + OUT_PROJ_NOTE,
}


def code_panel_key(title: str = "Show the code") -> str:
    """The session-state key of a page's code panel (``show_code``): True while it is open."""
    return f"code-panel:{title}"


def show_code(*objects: Callable | type | str, title: str = "Show the code") -> None:
    """The package source that computed what is on screen (objects, or dotted names imported only when shown), sent
    only while the panel is open: a closed one costs no 1.6 MB syntax highlighter. It stays open from step to step."""
    panel = st.expander(title, icon=":material/code:", key=code_panel_key(title), on_change="rerun")
    if not panel.open:
        return
    marked = this_run().cell_code  # set while this run drew its charts
    with panel:
        for obj in objects:
            obj = pkgutil.resolve_name(obj) if isinstance(obj, str) else obj  # a dotted name, looked up now
            module = inspect.getmodule(obj)
            where = f"{module.__name__}.{obj.__qualname__}" if module else obj.__qualname__
            st.caption(f"`{where}`" + steps_note(obj))
            source = source_of(obj)
            if marked and marked in source:
                source, marked = mark_line(source, marked), None
            st.code(source, language="python")


def mark_line(source: str, code: str) -> str:
    """``source`` with ``CELL_MARK`` after the first line that contains ``code`` (after its comment, if any)."""
    lines = source.split("\n")
    for number, line in enumerate(lines):
        if code in line:
            lines[number] = line + (CELL_MARK.replace("# ", "") if "#" in line else CELL_MARK)
            break
    return "\n".join(lines)


def steps_note(obj: Callable | type) -> str:
    """Why a panel shows a class's ``steps`` rather than its ``forward``: how it differs from the book's, or that a
    class after the chapter is the package's own; else nothing."""
    if getattr(obj, "__name__", "") != "steps":
        return ""
    return BOOK_NOTES.get(obj.__qualname__.split(".")[0], CACHED_STEPS_NOTE)


def finish_run(
    page_title: str, run: Run, url_path: str, address: Callable[[dict[str, str]], dict[str, str]] = dict
) -> dict[str, str]:
    """After the page: the step's JSON download (under the step's words when they have a column), then the view
    written into the URL and offered as "Copy link to this view" in the sidebar. ``address`` makes the address bar's
    parameters from the view's. Returns the view's."""
    state, this = st.session_state, this_run()
    drawn, step = this.figures, this.step
    if drawn:
        sections = list(this.sections)  # the book sections this run's captions named
        exported = step or (page_title, 0, "", "1")  # not ``shown``, reassigned below: the lambda runs when pressed
        aside = this.aside  # a step's narrow column of words: the button takes its width, not more
        (aside or st).download_button(
            "This step's numbers (JSON)",  # short: it fits a step's column of words at 1280 px
            data=lambda: step_json(step_payload(page_title, exported, run, sections, drawn)),
            file_name=f"{export_name('numbers')}.json",
            mime="application/json",
            on_click="ignore",
            icon=":material/download:",  # as each chart's CSV: the label says what, the icon that it downloads
            key="step_json",
            width="stretch" if aside else "content",
        )
    settings = state.get(SETTINGS) or chosen()  # ``chosen``, not entered at each run
    if state.get(TOKEN_WINDOW):  # the sidebar's window of tokens, which a run of the page alone does not draw
        this.params["win"] = "{}-{}".format(*state[TOKEN_WINDOW])
    page_params = tuple(this.params.items())
    params, link = view_link(settings, step, page_params, bool(state.get(PRESENTER)), st.context.url, url_path)
    shown = address(params)
    if st.query_params.to_dict() != shown:
        st.query_params.from_dict(shown)
    slot = state.get(LINK_SLOT) or st.sidebar  # ``widgets.sidebar`` reserved it
    with slot.popover("Copy link to this view", icon=":material/link:", width="stretch"):
        st.caption("Opens this page, step and settings with the same numbers. Click the copy icon.")
        st.code(link, language=None, wrap_lines=True)
        if settings.source == TEXT and len(settings.text) > MAX_URL_TEXT_CHARS:
            st.warning(f"Sentences over {MAX_URL_TEXT_CHARS:,} characters are not put in links.")
    return params


def step_payload(page_title: str, step: tuple, run: Run, sections: list[dict], drawn: list[dict]) -> dict:
    """What the step's JSON holds: the page and step, the settings (every index in them counted from 1, as in the
    link), the tokenizer, whether the numbers are the book's, and every figure's numbers. Made only when the button
    is pressed."""
    settings = run.settings
    shown = {k: v for k, v in vars(settings).items() if k != "head" and (k != "text" or settings.source == "text")}
    return {
        "page": page_title,
        "step": step[1] + 1,
        "step_name": step[3],
        "step_title": step[2],
        "settings": shown | {"head_n": settings.head + 1},  # from 1, as the link's layer_head_n (``OLD_NAMES``)
        "tokenizer": "none (the input could not be tokenized)" if run.prepared is None else run.prepared.tokenizer,
        "book_values": is_book(settings),
        "book_sections": sections,
        "note": JSON_NOTE,
        "figures": [
            {"name": d["name"], "title": d["title"], "traces": [json_table(t) for t in d["tables"]]} for d in drawn
        ],
    }
