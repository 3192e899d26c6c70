"""Colour is a measurement: the heatmap builders' scale rules, without Streamlit."""

import numpy as np
import pytest

from attention import figures

TOKENS = ["Your", " journey", " starts", " with"]
FUTURE = np.triu(np.ones((4, 4), dtype=bool), 1)


def weights(seed: int = 0, spread: float = 3.0) -> np.ndarray:
    scores = np.random.default_rng(seed).normal(size=(4, 4)) * spread
    scores[FUTURE] = -np.inf
    exp = np.exp(scores - scores.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def scale(fig) -> tuple[float, float]:
    heat = fig.data[0]
    assert heat.zauto is False, "an explicit range, so plotly keeps it"
    return heat.zmin, heat.zmax


def test_weights_are_always_on_the_fixed_0_to_1_scale():
    for z in (weights(), weights(spread=0.01), np.full((4, 4), 0.25)):
        fig = figures.heatmap(z, TOKENS, TOKENS, title="attn_weights", value_name="attention weight", masked=FUTURE)
        assert scale(fig) == (0.0, 1.0)
        assert fig.data[0].meta["kind"] == "weights"
        assert fig.data[0].colorscale[0][1] != fig.data[0].colorscale[-1][1]


def test_signed_values_are_centred_on_zero_with_a_symmetric_range():
    z = np.array([[0.5, -2.0], [1.0, 0.25]])
    fig = figures.heatmap(z, TOKENS[:2], TOKENS[:2], title="scores", value_name="score")
    assert fig.data[0].meta["kind"] == "signed"
    assert scale(fig) == (-2.0, 2.0)
    positive_scores = figures.heatmap(np.abs(z), TOKENS[:2], TOKENS[:2], title="scores", kind="signed")
    assert scale(positive_scores) == (-2.0, 2.0), "a signed quantity stays diverging even when all positive"


def test_non_negative_values_start_at_zero():
    fig = figures.heatmap(np.array([[0.5, 2.0], [1.0, 0.0]]), ["a", "b"], ["a", "b"], title="ones after dropout")
    assert fig.data[0].meta["kind"] == "nonnegative"
    assert scale(fig) == (0.0, 2.0)


def test_every_colour_range_spans_at_least_half_of_the_largest_value():
    rng = np.random.default_rng(1)
    for z in (rng.normal(size=(5, 5)) + 10, rng.random((5, 5)) * 1e-3, weights(spread=0.001)):
        low, high = scale(figures.heatmap(z, list("abcde")[: len(z)], list("abcde")[: len(z)], title="t"))
        assert high - low >= 0.5 * np.nanmax(np.abs(z))


def test_compared_panels_share_one_range():
    before = np.array([[4.0, -1.0], [2.0, 0.5]])
    after = before / np.sqrt(2)
    shared = figures.shared_range(before, after, kind="signed")
    assert shared == (-4.0, 4.0)
    ranges = {scale(figures.heatmap(m, ["a", "b"], ["a", "b"], title="t", value_range=shared)) for m in (before, after)}
    assert ranges == {(-4.0, 4.0)}
    assert figures.shared_range(weights(), weights(1), kind="weights") == (0.0, 1.0)


def test_the_heads_grid_shares_one_scale_and_one_colour_bar():
    stack = np.stack([weights(k) for k in range(3)])
    grid = figures.heatmap_grid(stack, ["h0", "h1", "h2"], TOKENS, TOKENS, title="heads", masked=FUTURE, columns=3)
    heats = [t for t in grid.data if t.type == "heatmap"]
    assert {(h.zmin, h.zmax, h.zauto) for h in heats} == {(0.0, 1.0, False)}
    assert [h.showscale for h in heats] == [True, False, False]
    assert grid.layout.yaxis2.showticklabels is False, "row labels only beside the first head"


def test_a_boolean_mask_has_two_colours_and_a_two_entry_legend():
    fig = figures.heatmap(FUTURE.astype(float), TOKENS, TOKENS, title="mask", kind="mask", decimals=0)
    heat = fig.data[0]
    assert heat.showscale is False
    assert len({colour for _, colour in heat.colorscale}) == 2
    legend = [t for t in fig.data if t.type == "scatter" and t.showlegend is not False]
    assert [t.name for t in legend] == ["False (0): visible", "True (1): masked, a future key"]
    assert fig.layout.showlegend


def test_masked_scores_are_grey_and_say_minus_infinity():
    scores = np.where(FUTURE, -np.inf, 1.0)
    fig = figures.heatmap(scores, TOKENS, TOKENS, title="masked_scores", kind="signed", masked=FUTURE)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[FUTURE]).all(), "a gap shows the grey background, never a colour of the scale"
    hover = [t for t in fig.data if t.name == "masked cells"][0]
    assert "−∞ (masked)" in hover.hovertemplate
    assert fig.data[0].meta["hidden_value"] == "-inf"


def test_weights_that_barely_differ_say_so_in_numbers():
    flat = np.array([[0.164, 0.168, 0.166], [0.165, 0.167, 0.166]])
    fig = figures.heatmap(flat, ["s0", "s1"], list("abc"), title="bahdanau_weights", value_name="attention weight")
    assert scale(fig) == (0.0, 1.0), "never stretched over the sliver"
    assert fig.layout.title.text == "bahdanau_weights"  # a half-width chart cuts a long title off: a line of its own
    assert fig.layout.title.subtitle.text == "all 0.164–0.168, within 0.004"
    varied = figures.heatmap(weights(), TOKENS, TOKENS, title="w", value_name="attention weight")
    assert varied.layout.title.text == "w" and not varied.layout.title.subtitle.text


def test_dropout_survivors_above_one_extend_the_scale_from_zero():
    keep = np.ones((2, 2), dtype=bool)
    fig = figures.heatmap(np.array([[2.0, 0.0], [1.2, 0.8]]), ["a", "b"], ["a", "b"], title="t", dropped=~keep)
    assert scale(fig) == (0.0, 2.0)
    assert fig.data[0].meta["hidden_value"] == 0.0


def test_the_highlighted_row_keeps_its_label_when_labels_thin_out():
    pieces = [f" t{j}" for j in range(30)]
    for row in (0, 7, 13, 29):
        fig = figures.heatmap(np.eye(30), pieces, pieces, title="t", highlight_row=row, style=figures.PRESENTER)
        assert row in fig.layout.yaxis.tickvals
        assert len(fig.layout.yaxis.tickvals) < 30


def test_unknown_kinds_are_refused():
    with pytest.raises(ValueError, match="kind"):
        figures.heatmap(np.eye(2), ["a", "b"], ["a", "b"], title="t", kind="rainbow")
