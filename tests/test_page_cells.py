"""The cell panel through AppTest (issue 25): the keyboard picker selects a cell of every explainable heatmap on
the wired pages, and the panel's result equals the drawn cell; the selection is kept per step, marked on the
step's charts and in the code (its matrix's ``Cells.code`` is in one line of the code the step shows), carried
by the link, and a bad link gets a notice, not a traceback."""

import re

import numpy as np
import pytest
from apptest_support import app, decode, figure_specs, next_step, previous_step, runs_recorded, type_sentence

from attention import figures
from explorer.widgets import steps

# page -> {step (from 0): the names of its explainable panels, in the order they are drawn}
WIRED = {
    "simplified": {4: ["attn-scores", "attn-weights"], 5: ["context-vectors"]},
    "qkv": {1: ["queries", "keys", "values"], 2: ["attn_scores", "scaled_scores"], 3: ["attn_weights", "output"]},
    "causal_mask": {
        0: ["unmasked-weights"],
        2: ["tril-masked", "tril-route"],
        3: ["masked-scores"],
        4: ["tril-route", "causal-weights"],
        5: ["causal-context"],
    },
    "dropout": {1: ["dropped"]},
    "batches": {2: ["batch-weights-0", "batch-weights-1"], 3: ["batch-context-0", "batch-context-1"]},
}
ROW, COL = 2, 1  # query 3, key 2: below the diagonal, so no masked cell


def picker(at, what: str):
    (found,) = [s for s in at.selectbox if s.key and s.key.startswith("w_cell:") and s.key.endswith(f":{what}")]
    return found


def panel_result(at) -> float:
    """The last number the panel's sum writes: the cell's value."""
    sums = [c.value for c in at.main.code if c.language != "python"][-1]  # not "Show the code"'s
    return float(re.findall(r"−?\d+\.\d{4}", sums)[-1].replace("−", "-"))


def heatmaps(at) -> list[np.ndarray]:
    """The z of every pickable heatmap on the step, in drawing order."""
    specs = figure_specs(at)
    return [decode(s["data"][0]["z"]) for s in specs if any(t.get("name") == "cells" for t in s["data"])]


def the_line_is_marked(at, shown: bool = True) -> None:
    """The selected matrix's ``Cells.code`` is in exactly one line of the code the step shows (a part of a line
    finds that line alone), and that line is the marked one; where the step does not show it (not ``shown``), in
    none, and nothing is marked."""
    wanted = RUNS[-1].cell_code  # the selected matrix's line, as the last run recorded it
    lines = [line for c in at.main.code if c.language == "python" for line in c.value.split("\n")]
    found = [line for line in lines if wanted in line]
    assert len(found) == int(shown), f"{wanted!r} is in {len(found)} lines of the step's code: {found}"
    assert [line for line in lines if steps.CELL_MARK.strip("# ") in line] == found


RUNS: list = []  # this test's page runs' records (``runs_recorded``)


@pytest.fixture(autouse=True)
def _record_runs(monkeypatch):
    global RUNS
    RUNS = runs_recorded(monkeypatch)


def go_to(page: str, step: int, **query):
    at = app(f"pages/{page}.py", query_params=query or None)
    for _ in range(step):
        next_step(at)
    return at


@pytest.mark.parametrize(("page", "step"), [(page, step) for page, steps in WIRED.items() for step in steps])
def test_the_picker_explains_every_heatmap_of_the_step(page, step):
    at = go_to(page, step)
    names = WIRED[page][step]
    matrices = heatmaps(at)
    assert len(matrices) == len(names), "every explainable heatmap of the step has a point per cell"
    (hint,) = [c.value for c in at.main.caption if c.value.startswith("Click or tap any cell")]  # no cell yet
    # The heatmaps lie beside the panel on a laptop and below it on a phone: the hint says neither.
    assert not re.search(r"\b(above|below|beside|left|right)\b", hint), hint
    at.session_state[steps.code_panel_key()] = True  # open: the selected matrix's line is marked there
    for number, name in enumerate(names):
        if len(names) > 1:
            at.selectbox(key=f"w_cell:{page}:{step}:matrix").select_index(number).run()
        picker(at, "row").select_index(ROW).run()
        picker(at, "col").select_index(COL).run()
        assert not at.exception, [e.value for e in at.exception]
        z = heatmaps(at)[number]
        assert panel_result(at) == pytest.approx(float(z[ROW, COL]), abs=1e-4), (page, step, name)
        shapes = [s for s in figure_specs(at)[number]["layout"].get("shapes", []) if s["line"]["width"] == 4]
        assert [(s["x0"], s["y0"]) for s in shapes] == [(COL - 0.5, ROW - 0.5)], "the chosen cell is outlined"
        the_line_is_marked(at)


def test_the_selection_is_kept_per_step_and_marked_on_the_other_panel():
    at = go_to("qkv", 3)
    picker(at, "row").select_index(3).run()
    picker(at, "col").select_index(4).run()
    weights, context = figure_specs(at)
    marks = [s for s in context["layout"]["shapes"] if s["line"]["color"] == figures.heatmaps.MARK_COLOUR]
    assert [(s["y0"], s["x0"]) for s in marks] == [(2.5, -0.5)], "query 4's row, the whole of it"
    next_step(at)
    previous_step(at)
    assert picker(at, "row").value == 3 and picker(at, "col").value == 4
    assert "α_45" in "\n".join(m.value for m in at.main.markdown)
    assert at.query_params["cell"] == "4,5"


@pytest.mark.parametrize(
    ("page", "step", "line"),
    [
        ("simplified", 4, "attn_scores = inputs @ inputs.T"),
        ("qkv", 3, "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5"),
        ("dropout", 1, "dropped_weights, dropout_mask = drop_with_mask("),
        ("causal_mask", 5, "context_vec = dropped_weights @ values"),
        ("multihead", 2, "return torch.cat([head(x) for head in self.heads], dim=-1)"),  # the wrapper's merge
        ("multihead", 5, "context_vec = context_vec.contiguous().view("),  # MultiHeadAttention's merge
        ("generate", 2, "keys = self.W_key(x)"),  # CachedMultiHeadAttention.steps: cached and recomputed alike
        ("generate", 5, "future = key_pos > query_pos"),  # sliding_window_mask's causal rule
    ],
)
def test_the_line_that_made_the_matrix_is_marked_in_the_code(page, step, line):
    at = go_to(page, step)
    at.session_state[steps.code_panel_key()] = True
    at.run()
    assert steps.CELL_MARK not in "\n".join(c.value for c in at.main.code), "nothing selected, nothing marked"
    picker(at, "row").select_index(ROW).run()
    source = "\n".join(c.value for c in at.main.code if c.language == "python")
    (marked,) = [text for text in source.split("\n") if steps.CELL_MARK.strip("# ") in text]
    assert line in marked


def test_a_link_opens_the_cell_and_a_new_sentence_starts_afresh():
    at = app("pages/causal_mask.py", query_params={"step": "unmasked-weights", "cell": "2,1"})
    assert not at.exception
    assert picker(at, "row").value == 1 and picker(at, "col").value == 0
    assert "α_21" in "\n".join(m.value for m in at.main.markdown)
    type_sentence(at, "A completely different sentence with more tokens")
    assert not at.exception and picker(at, "row").value is None, "another sentence: no stale cell"


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("two,one", "is not a cell such as 2,1"),
        ("99,1", "outside this 6×6 matrix"),
        ("0,1", "is not a cell"),
        ("", ""),
        ("2,1,3", "This step has 1 matrix to pick from, not 3"),
    ],
)
def test_a_bad_cell_in_the_link_gets_a_notice_not_a_traceback(raw, says):
    at = app("pages/causal_mask.py", query_params={"step": "unmasked-weights", "cell": raw})
    assert not at.exception
    notices = "\n".join(i.value for i in at.info).replace("\\", "")  # drawn escaped (``attention.prose.literal``)
    assert (says in notices) if says else "cell=" in notices
    assert picker(at, "row").value is None


def test_a_picker_value_that_is_not_an_option_selects_a_real_cell_not_a_traceback(monkeypatch):
    """A browser that sends a stale or crafted picker value (Streamlit hands back any text it cannot match to an
    option) gets the current cell, clamped, and no traceback."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from streamlit.testing.v1.element_tree import Selectbox

    at = go_to("causal_mask", 0)
    picker(at, "row").select_index(4).run()
    target, drawn = picker(at, "col").key, Selectbox._widget_state

    def crafted(box):  # what a browser holding another sentence's picker sends
        return (
            WidgetState(id=box.id, string_value="3: a key from another sentence")
            if box.key == target
            else (drawn.fget(box))
        )

    monkeypatch.setattr(Selectbox, "_widget_state", property(crafted))
    at.run()
    monkeypatch.undo()
    assert not at.exception
    assert "α_51" in "\n".join(m.value for m in at.main.markdown)
    assert picker(at, "col").value == 0


def test_a_selection_recomputes_no_view(monkeypatch):
    import attention

    at = go_to("causal_mask", 0)
    calls = []
    original = attention.compare_masking
    monkeypatch.setattr(attention, "compare_masking", lambda *a, **k: calls.append(1) or original(*a, **k))
    picker(at, "row").select_index(4).run()
    picker(at, "col").select_index(3).run()
    assert not at.exception and "α_54" in "\n".join(m.value for m in at.main.markdown)
    assert calls == [], "the mask view is cached: a selection only reads it"
    at.session_state["settings"] = at.session_state["settings"].__class__(seed=40961)  # no other test uses it
    at.run()
    assert calls, "the counter sees a computation when there is one"
