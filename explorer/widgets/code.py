"""The "Show the code" panel: the package source that computed what is on screen, read with ``inspect``."""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable

import streamlit as st

from explorer.session import CELL_CODE
from explorer.views.chapter import source_of

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
DROPOUT_CLASSES = ("CausalAttention", "MultiHeadAttention")
CACHED_STEPS_NOTE = (  # the same for the package's classes after the chapter, which the book does not have
    ": not in the book: the package's attention after chapter 3, its new lines marked `# New`, returning every "
    "tensor it computed. `forward` returns the output and the new cache."
)
CELL_MARK = "  # ◀ this cell"  # appended to the line that made the selected cell's matrix (``widgets.charts``)
BOOK_CLASSES = ("SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttention")


@functools.cache
def code_panel_key(title: str = "Show the code") -> str:
    """The session-state key of a page's code panel (``show_code``): True while it is open."""
    return f"code-panel:{title}"


def _named(obj: Callable | type | str) -> Callable | type:
    """``obj``, or the object its dotted name names (``"attention.gru_step"``)."""
    if not isinstance(obj, str):
        return obj
    module, _, name = obj.rpartition(".")
    return getattr(importlib.import_module(module), name)


def show_code(*objects: Callable | type | str, title: str = "Show the code") -> None:
    """The package source that computed what is on screen, read with ``inspect.getsource``.

    The code is sent only while the panel is open: opening it reruns the page's fragment. A closed
    panel then costs the browser no syntax highlighter (1.6 MB of JavaScript, about a quarter of a
    second of its main thread before the first chart was drawn) and each run no source text. The
    panel keeps its state from step to step of a page, by its key. An object may be given by its
    dotted name (``"attention.gru_step"``), looked up only when the panel is open: the first page's
    closed panel then imports nothing (its first run needs no torch, ``server``)."""
    panel = st.expander(title, icon=":material/code:", key=code_panel_key(title), on_change="rerun")
    if not panel.open:
        return
    marked = st.session_state.get(CELL_CODE)  # set while this run drew its charts
    with panel:
        for obj in map(_named, objects):
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
    """Why a panel shows a class's ``steps`` rather than its ``forward``: for the chapter's classes, each way
    it differs from the book's ``forward``; for the ones after it (a KV cache, grouped-query attention), that
    they are the package's own; else nothing."""
    if getattr(obj, "__name__", "") != "steps":
        return ""
    owner = obj.__qualname__.split(".")[0]
    if owner not in BOOK_CLASSES:
        return CACHED_STEPS_NOTE
    dropout = DROPOUT_NOTE if owner in DROPOUT_CLASSES else ""
    return STEPS_NOTE + dropout + (OUT_PROJ_NOTE if owner == "MultiHeadAttention" else "")
