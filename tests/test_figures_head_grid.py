"""``figures.charts.every_head_grid``: every layer and head as small multiples, L × H subplots on one fixed
0–1 scale with one colour bar, each labelled with its head's summary on a point a click can select."""

import re

import numpy as np
import pytest

from attention import figures
from attention.figures import figure_tables
from attention.figures.charts import PICK, every_head_grid, labels_fit
from explorer.models import HeadSummaries
from explorer.widgets.models import grid_title, head_label, head_labels, label_text

RNG = np.random.default_rng(0)


def causal_weights(layers: int, heads: int, tokens: int) -> np.ndarray:
    scores = RNG.normal(size=(layers, heads, tokens, tokens))
    scores = np.where(np.triu(np.ones((tokens, tokens), dtype=bool), 1), -np.inf, scores)
    exp = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)  # (L, h, T, T)


def grid(layers=3, heads=2, tokens=5, pieces=None, **options):
    weights = causal_weights(layers, heads, tokens)
    labels = [[f"L{layer + 1}H{head + 1}" for head in range(heads)] for layer in range(layers)]
    details = [[f"detail {layer + 1}.{head + 1}" for head in range(heads)] for layer in range(layers)]
    pieces = pieces or [f"t{i}" for i in range(tokens)]
    options.setdefault("title", "grid")
    return weights, every_head_grid(weights, labels, details, pieces, **options)


def heatmaps(fig):
    return [t for t in fig.data if t.type == "heatmap"]


def picks(fig):
    return [t for t in fig.data if t.type == "scatter" and t.name == PICK]


def test_one_subplot_per_layer_and_head_rows_are_layers():
    weights, fig = grid(layers=3, heads=2)
    shown = heatmaps(fig)
    assert len(shown) == 6 and len({(t.xaxis, t.yaxis) for t in shown}) == 6
    for layer in range(3):
        for head in range(2):
            trace = shown[layer * 2 + head]
            assert trace.meta["title"] == f"layer {layer + 1}, head {head + 1}"  # counted from 1
            z = np.asarray(trace.z, dtype=float)
            lower = np.tril(np.ones((5, 5), dtype=bool))
            np.testing.assert_array_equal(z[lower], weights[layer, head][lower].astype(np.float32))  # sent as float32
            assert np.isnan(z[~lower]).all()  # the causal mask's keys are blank, not 0 on the scale
    rows = {fig.layout[t.yaxis.replace("y", "yaxis")].domain for t in shown[::2]}
    assert len(rows) == 3  # three rows of subplots, one per layer
    headers = [a.text for a in fig.layout.annotations]
    assert headers == ["head 1", "layer 1", "head 2", "layer 2", "layer 3"]


def test_more_than_six_heads_are_numbered_under_one_head_header():
    _, fig = grid(layers=2, heads=7, tokens=3)
    headers = [a.text for a in fig.layout.annotations]
    assert headers == ["head", "1", "layer 1", *map(str, range(2, 8)), "layer 2"]  # "head 12" is wider than a column
    assert fig.layout.annotations[0].xanchor == "right"  # in the margin, above the layers' names


def test_one_fixed_zero_to_one_scale_and_one_colour_bar():
    _, fig = grid()
    shown = heatmaps(fig)
    assert all((t.zmin, t.zmax, t.zauto) == (0.0, 1.0, False) for t in shown)
    assert [t.showscale for t in shown] == [True] + [False] * (len(shown) - 1)
    assert len({str(t.colorscale) for t in shown}) == 1


def test_no_cell_numbers_no_tick_labels_numeric_axes_and_hover_names_everything():
    _, fig = grid(tokens=6)
    for trace in heatmaps(fig):
        assert trace.text is None and trace.texttemplate is None
        assert list(trace.x) == list(range(1, 7)) and list(trace.y) == list(range(1, 7))  # counted from 1
        for template in ("layer", "head", "query %{y}", "key %{x}", "%{z:.3f}"):
            assert template in trace.hovertemplate
    axes = [fig.layout[name] for name in fig.layout if name.startswith(("xaxis", "yaxis"))]
    assert len(axes) == 12
    assert all(
        a.showticklabels is False and a.tickmode == "array" and list(a.tickvals) == list(range(1, 7)) for a in axes
    )


def test_tokens_are_escaped_in_the_hidden_tick_text_hover_shows():
    _, fig = grid(tokens=3, pieces=["<b>x</b>", " a", "&"])
    assert list(fig.layout.xaxis.ticktext) == ["&lt;b&gt;x&lt;/b&gt;", "␣a", "&amp;"]
    assert list(fig.layout.yaxis6.ticktext) == list(fig.layout.xaxis.ticktext)


def test_each_small_multiple_has_one_selectable_point_with_its_label_and_layer_and_head():
    _, fig = grid(layers=2, heads=3, tokens=7)
    points = picks(fig)
    assert len(points) == 6
    for k, point in enumerate(points):
        layer, head = divmod(k, 3)
        assert [list(c) for c in point.customdata] == [[layer + 1, head + 1]]
        assert list(point.text) == [f"L{layer + 1}H{head + 1}"]
        assert f"detail {layer + 1}.{head + 1}" in point.hovertemplate
        assert point.marker.color == "rgba(0,0,0,0)"  # transparent: only its label shows
        assert point.x[0] > point.y[0]  # above the diagonal: in the blank triangle the causal mask leaves
        assert (point.xaxis, point.yaxis) == (heatmaps(fig)[k].xaxis, heatmaps(fig)[k].yaxis)


def test_labels_are_escaped():
    weights = causal_weights(1, 1, 3)
    fig = every_head_grid(weights, [["<b>x"]], [["<i>y"]], ["a", "b", "c"], title="<t>")
    assert list(picks(fig)[0].text) == ["&lt;b&gt;x"]
    assert "&lt;i&gt;y" in picks(fig)[0].hovertemplate
    assert fig.layout.title.text == "&lt;t&gt;"


def test_current_head_is_outlined_and_none_without_it():
    _, fig = grid(layers=3, heads=2, current=(2, 2))
    (shape,) = fig.layout.shapes
    assert (shape.xref, shape.yref) == ("x4 domain", "y4 domain")  # layer 2, head 2: the fourth subplot
    assert not grid()[1].layout.shapes


def test_exports_hold_every_heads_weights_not_the_click_points():
    weights, fig = grid(layers=2, heads=2, tokens=4)
    tables = figure_tables(fig)
    assert [t["title"] for t in tables] == [f"layer {a}, head {b}" for a in (1, 2) for b in (1, 2)]
    np.testing.assert_array_equal(tables[3]["values"], weights[1, 1].astype(np.float32))  # masked weights are 0
    assert tables[0]["rows"] == ["t0", "t1", "t2", "t3"]


def subplot_height(fig) -> float:
    plot_height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    return (fig.layout.yaxis.domain[1] - fig.layout.yaxis.domain[0]) * plot_height


def test_twelve_by_twelve_fits_a_steps_height_and_its_labels_move_to_the_hover_on_a_laptop():
    """A label takes a band of its own above its small multiple: 12 layers in a step's height leave no room for
    one, so the hover alone has them (it did not cover the weights when it was written over them either)."""
    _, fig = grid(layers=12, heads=12, tokens=30)
    assert len(heatmaps(fig)) == 144
    assert fig.layout.height <= figures.DEFAULT_STYLE.max_height
    assert subplot_height(fig) >= 26  # each small multiple still a readable triangle
    assert not labels_fit(12, figures.DEFAULT_STYLE) and all(p.mode == "markers" for p in picks(fig))
    assert all(f"L{k // 12 + 1}H{k % 12 + 1}" in p.hovertemplate for k, p in enumerate(picks(fig)))


def label_boxes(fig) -> list[tuple[float, float]]:
    """Each written label's vertical extent, bottom and top, in paper coordinates: above its point, which sits
    on the middle of its small multiple's top edge, plus the 2 px marker's half and plotly's 3 px text offset."""
    plot_height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    boxes = []
    for k, point in enumerate(picks(fig)):
        y_axis = fig.layout[f"yaxis{'' if k == 0 else k + 1}"]
        assert point.textposition == "top center" and point.cliponaxis is False
        assert point.y[0] == min(y_axis.range)  # the top edge (the y axis is reversed)
        bottom = y_axis.domain[1] + (point.marker.size / 2 + 3) / plot_height
        boxes.append((bottom, bottom + 1.25 * point.textfont.size / plot_height))
    return boxes


@pytest.mark.parametrize(("layers", "heads", "style"), [(4, 4, figures.DEFAULT_STYLE), (4, 4, figures.PRESENTER)])
def test_labels_stand_above_the_small_multiples_and_overlap_none_of_them(layers, heads, style):
    """The small GPT's 4 × 4 grid: each "spread 0.73" stands in a band above its small multiple, inside the figure
    and under the "head j" headers, and meets no small multiple's domain (it was drawn over the matrices)."""
    _, fig = grid(layers=layers, heads=heads, tokens=10, style=style)
    assert all(p.mode == "markers+text" for p in picks(fig))
    domains = [fig.layout[f"yaxis{'' if k == 0 else k + 1}"].domain for k in range(layers * heads)]
    plot_height = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    top = 1 + fig.layout.margin.t / plot_height
    headers = [a for a in fig.layout.annotations if a.text.startswith("head")]
    for bottom, upper in label_boxes(fig):
        assert not any(low < upper and bottom < high for low, high in domains)
        assert upper < top
    assert all(a.yshift >= 1.25 * style.font_size for a in headers)  # the headers stand above the first labels


def test_on_a_projector_12_layers_fit_under_the_stepper_and_their_labels_move_to_the_hover():
    _, fig = grid(layers=12, heads=12, tokens=30, style=figures.PRESENTER)
    assert fig.layout.height <= figures.PRESENTER.max_height  # 1280×720 under the title, stepper and a line
    assert subplot_height(fig) >= 20
    assert not labels_fit(12, figures.PRESENTER)
    assert all(p.mode == "markers" for p in picks(fig))  # 20 px labels would cover 22 px high matrices
    assert all(f"L{k // 12 + 1}H{k % 12 + 1}" in p.hovertemplate for k, p in enumerate(picks(fig)))
    sizes = [a.font.size for a in fig.layout.annotations] + [fig.layout.hoverlabel.font.size]
    assert min(sizes) >= 18
    _, shown = grid(layers=4, heads=4, tokens=30, style=figures.PRESENTER)
    assert all(p.mode == "markers+text" for p in picks(shown))  # four layers have room for them
    sizes = [a.font.size for a in shown.layout.annotations] + [p.textfont.size for p in picks(shown)]
    assert min(sizes) >= 18


def test_a_click_anywhere_in_a_small_multiple_selects_its_point():
    _, fig = grid()
    assert fig.layout.hoverdistance == -1  # no cut-off: the subplot's one point is always the nearest
    assert fig.layout.clickmode == "event+select" and fig.layout.hovermode == "closest"
    assert all(len(p.x) == 1 for p in picks(fig))  # one point per small multiple, so the nearest is its own


@pytest.mark.parametrize(("bad", "words"), [({"labels": [["a"]]}, "L × h grid"), ({"pieces": ["a"]}, "T tokens")])
def test_mismatched_labels_or_tokens_are_refused(bad, words):
    arguments = {"labels": [["a", "b"]], "details": [["a", "b"]], "pieces": ["x", "y", "z"]} | bad
    with pytest.raises(ValueError, match=words):
        every_head_grid(causal_weights(1, 2, 3), **arguments, title="t")


def test_head_label_names_what_gets_half_the_weight_or_else_the_spread():
    assert head_label(0.62, 0.1, 0.4) == "prev 0.62"
    assert head_label(0.2, 0.80, 0.3) == "first 0.80"
    assert head_label(0.3, 0.3, 0.71) == "spread 0.71"
    assert head_label(0.55, 0.6, 0.2) == "first 0.60"  # the larger of two that both pass
    summaries = HeadSummaries(
        previous_token=np.array([[0.7, 0.1]]),
        first_token=np.array([[0.1, 0.2]]),
        entropy=np.zeros((1, 2)),
        entropy_share=np.array([[0.2, 0.9]]),
        mean_distance=np.zeros((1, 2)),
        uniform_entropy=1.0,
    )
    labels, details = head_labels(summaries)
    assert labels == [["prev 0.70", "spread 0.90"]]
    assert details[0][1] == "prev 0.10 · first 0.20 · spread 0.90"
    assert grid_title(12, 12) == "attn_weights: 12 layers × 12 heads"
    assert head_label(0.62, 0.1, 0.4, short=True) == "P 0.62"
    wide = HeadSummaries(
        **{**vars(summaries), "previous_token": np.full((1, 7), 0.7)}
        | {name: np.zeros((1, 7)) for name in ("first_token", "entropy", "entropy_share", "mean_distance")}
    )
    assert head_labels(wide)[0][0] == ["P 0.70"] * 7  # more than six heads side by side: short labels


def test_the_caption_explains_the_short_labels_and_says_where_the_labels_are():
    assert "P = most weight on the previous token, F = on the first token, S = spread" in label_text(12)
    assert "P = " not in label_text(4) and "hover" not in label_text(4)
    assert label_text(12, written=False).startswith("Here the labels would cover the weights, so only the hover")
    assert label_text(12).startswith("On a phone only the hover shows them.")  # css.py hides them there
    sentences = re.split(r"(?<=\.) ", re.sub(r"\(.*?\)", "", label_text(12, written=False)))
    assert max(len(s.split()) for s in sentences) <= 35
