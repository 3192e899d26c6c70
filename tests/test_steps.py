"""A page's steps (``widgets.Steps``): one function per step, named in the URL by its function; links made
when steps were numbers still open the same step; a step that draws explainable charts shows the cell panel."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from apptest_support import app, function_app, next_step

from explorer.widgets.steps import NUMBERED, step_index

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "pages").glob("*.py"))
SLUG = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
CAUSAL = "pages/causal_mask.py"


def added_steps(path: Path) -> list[tuple[str, str]]:
    """(title, function name) of every step a page adds, in the order its source adds them: as a decorator
    ``@steps.add(title)`` or a call ``steps.add(title)(function)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        calls = []
        if isinstance(node, ast.FunctionDef):
            calls = [(d, node.name) for d in node.decorator_list if isinstance(d, ast.Call)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and node.args:
            target = node.args[0]
            calls = [(node.func, target.id if isinstance(target, ast.Name) else "?")]
        for call, name in calls:
            func = call.func
            adds = isinstance(func, ast.Attribute) and func.attr == "add" and isinstance(func.value, ast.Name)
            if adds and func.value.id == "steps":
                found.append((ast.literal_eval(call.args[0]) if call.args else "?", name, node.lineno))
    return [(title, name) for title, name, _ in sorted(found, key=lambda f: f[2])]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_a_page_with_steps_writes_each_as_a_function_named_for_what_it_shows(path):
    source = path.read_text(encoding="utf-8")
    assert "widgets.steps(" not in source, "a page adds its steps to widgets.Steps, not numbers to the stepper"
    assert not re.search(r"\bstep (==|in|not in|[<>]=?) ", source), "no step numbers: a step is a function"
    assert "cells.get(" not in source, "a chart's explanation is looked up with [name], which fails on a typo"
    steps = added_steps(path)
    if "widgets.Steps(" not in source:
        assert not steps
        return
    names = [name.strip("_").replace("_", "-") for _, name in steps]
    assert steps and len(set(names)) == len(names), names
    assert all(SLUG.fullmatch(n) for n in names), names
    assert source.rstrip().endswith("steps.show()") or "steps.show()" in source


def test_a_link_names_a_step_by_name_or_by_its_old_number():
    slugs = ("one-draw", "row-sums", "many-draws")
    assert step_index("row-sums", slugs, 3) == 1
    assert step_index("2", slugs, 3) == 1  # a link made when steps were numbers, counted from 1
    assert step_index("9", slugs, 3) == 2 and step_index("0", slugs, 3) == 0  # clamped to the page's steps
    assert step_index("Row-Sums", slugs, 3) is None and step_index("", slugs, 3) is None
    assert step_index(None, slugs, 3) is None


def test_an_old_number_opens_the_step_it_opened_then_after_a_step_is_inserted():
    then = ("one-draw", "row-sums", "many-draws")
    now = ("one-draw", "keep-mask", "row-sums", "many-draws")  # a step added since, second
    assert [step_index(str(n), now, 4, then) for n in (1, 2, 3)] == [0, 2, 3]
    assert step_index("4", now, 4, then) == 3  # past what was numbered: the position, clamped
    assert step_index("3", ("one-draw", "row-sums"), 2, then) == 1  # a step not shown here: the position


@pytest.mark.parametrize("page", sorted(NUMBERED))
def test_every_step_an_old_number_opened_is_still_a_step_of_its_page(page):
    slugs = [name.strip("_").replace("_", "-") for _, name in added_steps(ROOT / "pages" / f"{page}.py")]
    assert set(NUMBERED[page]) <= set(slugs), set(NUMBERED[page]) - set(slugs)


def test_every_page_with_steps_has_its_old_numbers_recorded():
    stepped = {p.stem for p in PAGES if "widgets.Steps(" in p.read_text(encoding="utf-8")}
    assert stepped == set(NUMBERED)


def shown_step(at) -> str:
    """The stepper's "Step k of n · title" line."""
    (line,) = [m.value for m in at.markdown if "Step " in m.value and " of " in m.value]
    return re.sub(r"<[^>]+>", "", line)


def link_params(at) -> dict[str, str]:
    (link,) = [c.value for c in at.code if c.value.startswith("http")]
    return {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}


def test_an_old_numbered_link_opens_the_same_step_and_its_link_then_names_it():
    at = app(CAUSAL, query_params={"step": "3"})
    assert not at.exception
    assert shown_step(at) == "Step 3 of 6 · × mask, ÷ row sums"
    assert link_params(at)["step"] == "zero-and-renormalize"


def test_a_named_link_opens_its_step_and_next_names_the_next():
    at = app(CAUSAL, query_params={"step": "scores-with-minus-infinity"})
    assert shown_step(at) == "Step 4 of 6 · Scores with −∞"
    next_step(at)
    assert shown_step(at) == "Step 5 of 6 · Two routes, same weights"
    assert link_params(at)["step"] == "two-routes"
    fresh = app(CAUSAL, query_params=link_params(at))  # the link opens what it was made from
    assert shown_step(fresh) == "Step 5 of 6 · Two routes, same weights"


def test_a_link_to_a_step_the_page_does_not_have_says_which_it_has():
    at = app(CAUSAL, query_params={"step": "<b>nope</b>"})
    assert not at.exception
    assert shown_step(at).startswith("Step 1 of 6")
    (info,) = [i.value.replace("\\", "") for i in at.info if "in the link is not a step" in i.value]
    assert "unmasked-weights" in info and "context-vectors" in info and "<b>" in info  # quoted as typed


def one_step_page(panel: str):
    """A page of one step that draws charts whose cells explain themselves; ``panel``: where the step places the
    cell panel: "after" its chart, "before" a second one, or "none" (the kit places it)."""
    import numpy as np

    from attention import figures
    from attention.prose import cells
    from attention.prose.cells import Notation
    from explorer import widgets

    scores = np.array([[0.0, 1.0], [1.0, 0.0]], dtype=np.float32)
    steps = widgets.Steps("steps_test")

    @steps.add("Weights")
    def weights():
        explain = cells.weights(scores, ("a", "b"), code="attn_weights = ", notation=Notation("attn_weights"))
        widgets.draw(figures.heatmap, "weights", scores, ("a", "b"), ("a", "b"), title="w", explain=explain)
        if panel != "none":
            widgets.explain_cell()
        if panel == "before":
            widgets.draw(figures.heatmap, "again", scores, ("a", "b"), ("a", "b"), title="v", explain=explain)

    try:
        steps.show()
    except RuntimeError as error:  # shown as a traceback in the app; here its words, which the app redacts
        import streamlit as st

        st.error(str(error))


@pytest.mark.parametrize("panel", ["after", "none", "before"])
def test_a_step_that_draws_cells_to_explain_shows_the_cell_panel_after_its_last_such_chart(panel):
    at = function_app(one_step_page, panel=panel)
    assert not at.exception
    errors = [e.value for e in at.error]
    if panel != "before":  # the step's own panel, or the kit's after the step
        assert not errors
        assert [s.label for s in at.selectbox] == ["Query", "Key"]
    else:
        assert len(errors) == 1 and "cell panel" in errors[0] and "weights" in errors[0], errors
