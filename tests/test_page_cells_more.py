"""The cell panel on Multi-head, Why attention, Break it, Tokens and Generate (issue 25), through AppTest: the
keyboard picker selects a cell of every explainable heatmap, the panel's result equals the drawn cell to
1e-4 (a mask's entry exactly), and the terms it writes are the package's own (``attention.derivations``,
computed here afresh)."""

import re

import numpy as np
import pytest
import torch
from apptest_support import app, decode, figure_specs, next_step
from test_derivations import grown_and_recomputed_keys
from test_page_cells import COL, ROW, _record_runs, go_to, picker, the_line_is_marked  # noqa: F401 (the fixture)

import attention
from attention import derivations
from attention.before_chapter.reversal import untrained_reversal
from attention.prose.cells import factor, number
from explorer import views
from explorer.settings import Settings
from explorer.widgets import steps

RUN = views.Run.of(Settings())  # the pages' defaults: the book's six tokens, d_in = 3, d_out = 2, two heads


def multihead(name: str):
    v = views.multihead_view(RUN)

    def weight(scores, head=0):
        return derivations.weight(np.array(scores[head, ROW], dtype=np.float64), COL, row=ROW, subtract_max=False)

    return {
        "wrapper-heads": lambda: weight(v.wrapper_scores),
        "head-weights": lambda: weight(v.wrapper_scores),
        "head-context": lambda: derivations.weighted_sum(v.wrapper_weights[0, ROW], v.wrapper_values[0], COL),
        "wrapper-output": lambda: derivations.merge(np.array(v.wrapper_weights), np.array(v.wrapper_values), ROW, COL),
        "efficient-heads": lambda: weight(v.efficient_scores),
        "efficient-context": lambda: derivations.merge(
            np.array(v.efficient_weights), np.array(v.efficient_values), ROW, COL
        ),
        "efficient-output": lambda: derivations.out_projection(
            v.efficient_context[ROW], np.array(v.out_weight), COL, num_heads=2, bias=np.array(v.out_bias), row=ROW
        ),
    }[name]()


def seq2seq():
    x = torch.tensor(RUN.ready().inputs)  # (6, 3)
    trace = attention.encoder_decoder(x, hidden_size=views.WHY_HIDDEN_SIZE, seed=123)
    return trace, attention.seq2seq_weights(3, views.WHY_HIDDEN_SIZE, None, 123)


def why(name: str):
    x = np.array(RUN.ready().inputs, dtype=np.float64)
    if name == "encoder-states":
        return (derivations.encoder_state(*seq2seq(), ROW, COL),)
    if name == "bahdanau-weights":
        trace, weights = seq2seq()
        return derivations.bahdanau_weight(trace, ROW, COL), derivations.bahdanau_score(trace, weights, ROW, COL)
    if name == "reversal-alignment":  # column COL of the first panel: the untrained model
        model = untrained_reversal()
        return (derivations.reversal_weight(model, list(RUN.ready().ids), ROW, COL),)
    score = derivations.contrast_score if name.startswith("additive") else lambda x, i, j: derivations.score(x, x, i, j)
    row = [score(x, ROW, j).value for j in range(len(x))]
    return derivations.weight(row, COL, row=ROW, subtract_max=False), score(x, ROW, COL)


def mistake():
    from explorer.views.beyond import mistake_view

    result, mha, x = mistake_view(RUN, "fill_zero").cell_inputs
    right, wrong = derivations.mistake_cell(result, mha, x, ROW, COL)
    return right, wrong, right.details["score"], wrong.details["score"]


def generate(name: str):
    """Generate's cache step (the book's sentence, layer 1, head 1) and window step (a window of 3)."""
    if name.endswith("-keys"):  # the first rows of the page's 40 tokens: the same keys, to rounding
        cached, recomputed = grown_and_recomputed_keys()
        return (derivations.cache_entry(cached, recomputed, 0, 0, ROW, COL, shown=name.split("-")[0]),)
    return (derivations.window_mask_entry(6, None if name == "causal-mask" else 3, ROW, COL),)


def written(d) -> list[str]:
    """What the panel must write of ``d``: each product's factors, each exp of a softmax row, both keys, or a
    mask's entry."""
    if d.kind in ("weight",):
        return [number(t.value) for t in d.terms if not t.masked]
    if d.kind == "cache_entry":
        return [number(t.value) for t in d.terms]
    if d.kind == "window_mask":
        return [f"mask[{d.row}, {d.col}] = {d.value:.0f}"]
    if d.kind == "gru_state":
        return [number(t.value) for t in d.terms] + [f"{d.details['z']:.4f}", number(d.details["n"])]
    return ["·".join(factor(f) for f in t.factors) for t in d.terms[:8]]


# page -> {step: [(panel name, the derivations its cell (ROW, COL) is written from)]}
CASES = {
    "multihead": {
        0: ["wrapper-heads"],
        1: ["head-weights", "head-context"],
        2: ["wrapper-output"],
        4: ["efficient-heads"],
        5: ["efficient-context", "efficient-output"],
    },
    "why_attention": {
        0: ["encoder-states"],
        2: ["bahdanau-weights"],
        4: ["reversal-alignment"],
        6: ["dot-product-weights", "additive-weights"],
    },
    "tokens": {1: ["input-embeddings"]},
    "generate": {1: ["query-rows"], 2: ["cached-keys", "recomputed-keys"], 5: ["causal-mask", "window-mask"]},
}


def expected(page: str, name: str) -> tuple:
    if page == "multihead":
        return (multihead(name),)
    if page == "why_attention":
        return why(name)
    if page == "generate" and name != "query-rows":
        return generate(name)
    return ()


# Panels whose matrix is made by code the step's "Show the code" does not show: no line is marked.
UNSHOWN = {
    ("multihead", 0, "wrapper-heads"),  # CausalAttention.steps' softmax; the step shows MultiHeadAttentionWrapper
    ("why_attention", 4, "reversal-alignment"),  # the reversal model's; the page shows the untrained encoder–decoder
    ("why_attention", 6, "dot-product-weights"),  # self_attention_contrast's x·xᵀ; the page shows additive_scores
}


def panel_sums(at) -> str:
    return "\n".join(c.value for c in at.main.code if c.language != "python")


def drawn(at) -> list[list[np.ndarray]]:
    """The z of every heatmap of each pickable figure on the step, in drawing order."""
    specs = [s for s in figure_specs(at) if any(t.get("name") == "cells" for t in s["data"])]
    return [[decode(t["z"]) for t in s["data"] if t.get("type") == "heatmap"] for s in specs]


def last_number(text: str) -> float:
    return float(re.findall(r"−?\d+\.\d{4}", text)[-1].replace("−", "-"))


def cell_value(sums: str) -> float:
    """What the panel's sum ends at: its last 4-decimal number, or a mask's entry (``mask[5, 1] = 1``)."""
    entry = re.search(r"^mask\[\d+, \d+\] = ([01]) ", sums, re.MULTILINE)
    return float(entry.group(1)) if entry else last_number(sums)


@pytest.mark.parametrize(("page", "step"), [(page, step) for page, steps in CASES.items() for step in steps])
def test_the_panel_writes_the_drawn_cell_from_the_packages_terms(page, step):
    at = go_to(page, step)
    at.session_state[steps.code_panel_key()] = True  # open: the selected matrix's line is marked there
    names = CASES[page][step]
    assert len(drawn(at)) == len(names), "every explainable heatmap of the step has its points"
    for number_, name in enumerate(names):
        if len(names) > 1:
            at.selectbox(key=f"w_cell:{page}:{step}:matrix").select_index(number_).run()
        picker(at, "row").select_index(min(ROW, len(picker(at, "row").options) - 1)).run()
        picker(at, "col").select_index(COL).run()
        assert not at.exception, [e.value for e in at.exception]
        row = picker(at, "row").value
        sums = panel_sums(at)
        z = drawn(at)[number_][0]
        assert cell_value(sums) == pytest.approx(float(z[row, COL]), abs=1e-4), (page, step, name)
        for derivation in expected(page, name):
            assert derivation.value == pytest.approx(float(z[row, COL]), abs=1e-4) or derivation.kind.endswith("score")
            for text in written(derivation):
                assert text in sums, (name, text, sums)
        the_line_is_marked(at, shown=(page, step, name) not in UNSHOWN)


def test_break_it_writes_the_right_and_the_wrong_cell_side_by_side():
    at = app("pages/mistakes.py")
    next_step(at)
    at.session_state[steps.code_panel_key("Show the code: the package's step, then the mistaken one")] = True
    picker(at, "row").select_index(ROW).run()
    picker(at, "col").select_index(COL).run()
    assert not at.exception
    right_z, wrong_z = drawn(at)[0]
    right_text, wrong_text = [c.value for c in at.main.code if c.language != "python"][-2:]
    assert last_number(right_text) == pytest.approx(float(right_z[ROW, COL]), abs=1e-4)
    assert last_number(wrong_text) == pytest.approx(float(wrong_z[ROW, COL]), abs=1e-4)
    right, wrong, right_score, wrong_score = mistake()
    for derivation, text in ((right, right_text), (wrong, wrong_text), (right_score, right_text)):
        for term in written(derivation):
            assert term in text
    markdown = "\n".join(m.value for m in at.main.markdown)
    assert "The changed line: the hidden keys' scores are 0, not −∞, so their exps are not 0." in markdown
    assert "hidden keys' scores set to 0: 4–6" in wrong_text and "set to 0" not in right_text
    the_line_is_marked(at)
    outlined = [s for s in figure_specs(at)[0]["layout"]["shapes"] if s["line"].get("width") == 4]
    assert sorted((s["xref"], s["x0"], s["y0"]) for s in outlined) == [
        ("x", COL - 0.5, ROW - 0.5),
        ("x2", COL - 0.5, ROW - 0.5),
    ], "the cell is outlined on both panels"


def test_an_embedding_says_which_table_it_came_from_not_a_sum():
    at = go_to("tokens", 1)
    picker(at, "row").select_index(ROW).run()
    picker(at, "col").select_index(COL).run()
    words = "\n".join(m.value for m in at.main.markdown)
    assert "No arithmetic made it" in words and "hand-picked" in words
    assert panel_sums(at).endswith(number(float(RUN.ready().inputs[ROW, COL])))


def test_a_grid_of_heads_explains_the_second_heads_cell():
    at = go_to("multihead", 4)
    picker(at, "col").select_index(6 + COL).run()  # head 2's key COL: the grid's columns run on across heads
    picker(at, "row").select_index(ROW).run()
    z = drawn(at)[0][1]  # head 2's panel
    assert last_number(panel_sums(at)) == pytest.approx(float(z[ROW, COL]), abs=1e-4)
    words = "\n".join(m.value for m in at.main.markdown)
    assert "Head 2 of 2" in words
    assert f"`attn_weights[0, 1, {ROW}, {COL}]`" in words  # MultiHeadAttention's (b, num_heads, T, T) tensor
    marked = [s for s in figure_specs(at)[0]["layout"]["shapes"] if s["line"].get("width") == 4]
    assert [(s["xref"], s["x0"]) for s in marked] == [("x2", COL - 0.5)]


def outlined(spec: dict) -> list[tuple[float, float]]:
    return [(s["x0"], s["y0"]) for s in spec["layout"].get("shapes", []) if s["line"].get("width") == 4]


@pytest.mark.parametrize(
    ("step", "row", "col", "line"),
    [
        (2, 4, 3, "keys = self.W_key(x)"),  # a token and a dimension
        (5, 5, 1, "return future | (key_pos <= query_pos - window)"),  # 4 tokens back
    ],
)
def test_generates_cache_and_window_panels_outline_the_same_cell_and_explain_the_second(step, row, col, line):
    at = go_to("generate", step)
    at.session_state[steps.code_panel_key()] = True
    picker(at, "row").select_index(row).run()
    picker(at, "col").select_index(col).run()
    first, second = drawn(at)
    marks = [outlined(spec) for spec in figure_specs(at)[:2]]
    assert marks == [[(col - 0.5, row - 0.5)]] * 2, "rows and columns are named alike: the same cell on both"
    at.selectbox(key=f"w_cell:generate:{step}:matrix").select_index(1).run()
    assert not at.exception and cell_value(panel_sums(at)) == pytest.approx(float(second[0][row, col]), abs=1e-4)
    marks = [outlined(spec) for spec in figure_specs(at)[:2]]
    assert marks == [[(col - 0.5, row - 0.5)]] * 2, "a pick on the second panel outlines the first, drawn before it"
    source = "\n".join(c.value for c in at.main.code if c.language == "python")
    (marked,) = [text for text in source.split("\n") if steps.CELL_MARK.strip("# ") in text]
    assert marked.strip().startswith(line), "the second panel's line is the marked one"
    words = "\n".join(m.value for m in at.main.markdown)
    if step == 2:
        assert "Here it is made again in one pass over the whole text" in words and "that is why caching works" in words
    else:  # query 6, key 2, a window of 3: visible to the causal mask, too far back for the window
        assert (float(first[0][row, col]), float(second[0][row, col])) == (0.0, 1.0)
        assert "6 − 2 = 4 ≥ 3, too far back" in words
        assert panel_sums(at).endswith("mask[5, 1] = 1  (masked: score → −∞)")
