"""``attention.figures.charts``: the diff, right beside wrong on one 0–1 scale, NaN rows, the numbers and the curve."""

from types import SimpleNamespace

import numpy as np
import pytest

import attention
from attention import figures
from attention.figures import charts as drawn

FUTURE = np.triu(np.ones((4, 4), dtype=bool), 1)
RIGHT = np.tril(np.full((4, 4), 0.25)) / np.tril(np.full((4, 4), 0.25)).sum(axis=1, keepdims=True)
TOKENS = ["a", "<b>x</b>", "a", " [z](javascript:1)"]


def heatmaps(fig):
    return [t for t in fig.data if t.type == "heatmap"]


def test_both_panels_share_one_fixed_0_to_1_scale_and_one_colour_bar():
    wrong = np.full((4, 4), 0.01)  # a sliver of the scale: it must not be stretched
    fig = drawn.right_and_wrong(RIGHT, wrong, TOKENS, future=FUTURE, title="t")
    right_trace, wrong_trace = heatmaps(fig)
    assert right_trace.coloraxis == wrong_trace.coloraxis == "coloraxis"
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert sum(1 for t in heatmaps(fig) if t.showscale is not False and t.coloraxis is None) == 0  # one colour bar
    assert right_trace.zmin is None and wrong_trace.zmin is None  # no per-panel range
    z = np.asarray(wrong_trace.z, dtype=float)
    # sent as float32; a mistake's weights on the future are drawn, not masked
    np.testing.assert_array_equal(z, wrong.astype(np.float32))


def test_future_cells_given_zero_are_blank_and_labelled_masked():
    fig = drawn.right_and_wrong(RIGHT, RIGHT, TOKENS, future=FUTURE, title="t")
    z = np.asarray(heatmaps(fig)[0].z, dtype=float)
    assert np.isnan(z[FUTURE]).all()
    np.testing.assert_array_equal(z[~FUTURE], RIGHT[~FUTURE].astype(np.float32))  # sent as float32
    masked = [t for t in fig.data if t.type == "scatter" and t.name == "masked"]
    assert len(masked) == 2 and all(len(t.text) == FUTURE.sum() for t in masked)


def test_nan_rows_are_filled_labelled_and_counted_never_drawn_as_zero():
    wrong = RIGHT.copy()
    wrong[2:] = np.nan
    fig = drawn.right_and_wrong(RIGHT, wrong, TOKENS, future=FUTURE, title="t")
    z = np.asarray(heatmaps(fig)[1].z, dtype=float)
    assert np.isnan(z[2:]).all() and not (z[2:] == 0).any()
    (nan_labels,) = [t for t in fig.data if t.type == "scatter" and t.name == "NaN"]
    assert list(nan_labels.y) == [2, 3] and set(nan_labels.text) == {"NaN row"}
    rows = sorted((s.y0, s.y1) for s in fig.layout.shapes if s.fillcolor == drawn.NAN_FILL)
    assert rows == [(1.5, 2.5), (2.5, 3.5)]
    assert [a.text for a in fig.layout.annotations] == [
        "right: the package's code",
        "wrong: with the mistake · 2 NaN rows",
    ]


def test_token_labels_are_escaped_and_duplicates_stay_apart():
    fig = drawn.right_and_wrong(RIGHT, RIGHT, TOKENS, future=FUTURE, title="<i>t</i>")
    assert list(fig.layout.yaxis.tickvals) == [0, 1, 2, 3]  # numeric axes: the two "a" rows stay two rows
    assert list(fig.layout.yaxis.ticktext) == [figures.token_label(t) for t in TOKENS]
    assert "&lt;b&gt;" in fig.layout.xaxis2.ticktext[1] and "<b>" not in fig.layout.xaxis2.ticktext[1]
    assert fig.layout.title.text == "&lt;i&gt;t&lt;/i&gt;"


def test_dropout_weights_share_a_scale_fixed_by_p():
    fig = drawn.right_and_wrong(RIGHT * 2, RIGHT, TOKENS, future=FUTURE, title="t", zmax=2.0)
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 2.0)


def test_long_inputs_are_drawn_as_block_means_within_a_presenter_screen():
    size = 400
    weights = np.tril(np.ones((size, size))) / np.arange(1, size + 1)[:, None]
    wrong = weights.copy()
    wrong[0] = np.nan
    future = np.triu(np.ones((size, size), dtype=bool), 1)
    fig = drawn.right_and_wrong(weights, wrong, ["t"] * size, future=future, title="t", style=figures.PRESENTER)
    assert all(np.asarray(t.z).shape[0] <= figures.DEFAULT_STYLE.max_cells_per_axis for t in heatmaps(fig))
    assert fig.layout.height <= figures.PRESENTER.max_height
    assert [s for s in fig.layout.shapes if s.fillcolor == drawn.NAN_FILL]  # the NaN block is still marked


def test_thirty_tokens_in_presenter_mode_label_what_fits():
    size = 30
    weights = np.tril(np.ones((size, size))) / np.arange(1, size + 1)[:, None]
    future = np.triu(np.ones((size, size), dtype=bool), 1)
    fig = drawn.right_and_wrong(
        weights, weights, [f"w{k}" for k in range(size)], future=future, title="t", style=figures.PRESENTER
    )
    assert fig.layout.height <= figures.PRESENTER.max_height
    assert fig.layout.yaxis.tickfont.size >= 18 and fig.layout.font.size >= 18
    assert 2 <= len(fig.layout.yaxis.ticktext) < size


def test_shapes_must_match():
    with pytest.raises(ValueError, match="4×4"):
        drawn.right_and_wrong(RIGHT, RIGHT[:3, :3], TOKENS, future=FUTURE, title="t")


def test_the_diff_marks_removed_added_and_unchanged_lines():
    for mistake in attention.MISTAKES.values():
        diff = drawn.code_diff(mistake.right_code, mistake.wrong_code).splitlines()
        assert [line[2:] for line in diff if line[0] in "- "] == mistake.right_code.splitlines()
        assert [line[2:] for line in diff if line[0] in "+ "] == mistake.wrong_code.splitlines()
        assert any(line.startswith("- ") for line in diff) and any(line.startswith("+ ") for line in diff)
    moved = attention.MISTAKES["mask_after_softmax"]
    lines = drawn.code_diff(moved.right_code, moved.wrong_code).splitlines()
    assert [line[0] for line in lines] == ["-", " ", "+"]  # the softmax line stays, the mask moves after it


def test_measure_rows_print_what_run_mistake_measured():
    run = attention.run_mistake(
        "tril_mask",
        attention.build(attention.MultiHeadAttention, 123, 3, 2, 6, 0.0, num_heads=2),
        attention.BOOK_INPUTS,
    )
    rows = drawn.measure_rows(run.measures)
    assert [r["measured"] for r in rows] == [m.label for m in run.measures]
    nan_rows = rows[[m.key for m in run.measures].index("nan_rows")]
    assert (nan_rows["right"], nan_rows["wrong"]) == ("0", "2")
    assert drawn.format_number(float("nan")) == "NaN" and drawn.format_number(0.123456) == "0.1235"


def test_the_saturation_curve_draws_both_codes_and_the_uniform_line():
    curve = SimpleNamespace(
        d_ks=np.array([1, 4, 16]),
        right_max_weight=np.array([0.3, 0.35, 0.34]),
        wrong_max_weight=np.array([0.3, 0.6, 0.9]),
        right_grad_norm=np.array([0.3, 0.3, 0.3]),
        wrong_grad_norm=np.array([0.3, 0.2, 0.05]),
        right_param_grad=np.array([1.5, 1.6, 1.6]),
        wrong_param_grad=np.array([1.5, 0.4, 0.01]),
        num_keys=8,
    )
    fig = drawn.saturation(curve, stat="max_weight", wrong_name="no scaling", head_dim=4)
    series = {t.name: list(t.y) for t in fig.data}
    assert series == {
        "÷ √d_k (right)": [0.3, 0.35, 0.34],
        "no scaling (wrong)": [0.3, 0.6, 0.9],
        "all weights equal (1/8)": [0.125] * 3,
    }
    assert fig.layout.xaxis.type == "log" and fig.layout.shapes[0].x0 == 4
    grad = drawn.saturation(curve, stat="grad_norm", wrong_name="÷ d_k")
    assert [t.name for t in grad.data] == ["÷ √d_k (right)", "÷ d_k (wrong)"] and not grad.layout.shapes
    assert grad.layout.yaxis.type != "log" and "softmax's input" in grad.layout.title.text
    params = drawn.saturation(curve, stat="param_grad", wrong_name="÷ d_k")
    assert [list(t.y) for t in params.data] == [[1.5, 1.6, 1.6], [1.5, 0.4, 0.01]]
    assert params.layout.yaxis.type == "log" and "W_query, W_key gradient" in params.layout.title.text


def test_thin_nan_rows_get_one_label_per_run():
    size = 30
    weights = np.tril(np.ones((size, size))) / np.arange(1, size + 1)[:, None]
    wrong = weights.copy()
    wrong[[0, 27, 28, 29]] = np.nan
    future = np.triu(np.ones((size, size), dtype=bool), 1)
    fig = drawn.right_and_wrong(weights, wrong, ["t"] * size, future=future, title="t")
    (labels,) = [t for t in fig.data if t.type == "scatter" and t.name == "NaN"]
    assert list(labels.y) == [0, 27]
    assert len([s for s in fig.layout.shapes if s.fillcolor == drawn.NAN_FILL]) == 4  # every NaN row is filled


def test_the_panels_print_their_weights_with_two_decimals():
    """Was: the raw float32 numbers ("0.24581576883792877") after cell_text's signature changed."""
    fig = drawn.right_and_wrong(RIGHT, RIGHT, TOKENS, future=FUTURE, title="t")
    texts = np.asarray(heatmaps(fig)[0].text)
    assert texts[1, 0] == "0.50" and texts[0, 1] == ""  # a shown weight; a masked cell's number is blank
