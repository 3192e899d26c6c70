"""The shared figure builders: labels are literal and distinct, conventions hold, numbers survive."""

import html
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from tolerances import EPS32, summation_error, within

from attention import figures
from attention.figures.heatmaps import plot_width

HOSTILE = ["<b>bold</b>", "<br>", '<a href="javascript:alert(1)">x</a>', "&amp;", " step", " step"]


def test_token_label_escapes_and_makes_whitespace_visible():
    assert figures.token_label("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert figures.token_label(" step") == "␣step"
    assert figures.token_label("\t\n") == "⇥↵"
    assert figures.token_label("\u200b") == "⟨U+200B⟩"
    assert figures.token_label("&amp;") == "&amp;amp;"
    assert figures.token_label("") == "∅"
    assert len(figures.token_label("x" * 100)) <= 24


def test_visible_token_is_not_escaped_for_literal_displays():
    assert figures.visible_token("<b>") == "<b>"
    assert figures.visible_token(" a") == "␣a"


def test_heatmap_keeps_duplicate_tokens_distinct_and_escapes_labels():
    z = np.arange(36, dtype=float).reshape(6, 6)
    fig = figures.heatmap(z, HOSTILE, HOSTILE, title="scores <i>", kind="signed")
    heat = fig.data[0]
    assert list(heat.x) == list(range(6)) and list(heat.y) == list(range(6))
    ticks = list(fig.layout.yaxis.ticktext)
    assert len(ticks) == 6 and ticks[-1] == ticks[-2] == "␣step"
    assert all("<" not in t for t in ticks)
    assert fig.layout.title.text == "scores &lt;i&gt;"
    np.testing.assert_array_equal(np.asarray(heat.z), z)  # whole numbers: exact in float32 too
    assert heat.zauto is False and heat.zmin == -35 and heat.zmax == 35


def test_heatmap_masked_cells_are_blank_and_labelled():
    z = np.ones((3, 3))
    mask = np.triu(np.ones((3, 3), dtype=bool), k=1)
    fig = figures.heatmap(z, ["a", "b", "c"], ["a", "b", "c"], title="masked", masked=mask)
    heat = fig.data[0]
    assert np.isnan(np.asarray(heat.z, dtype=float)[mask]).all()
    labels = [t for t in fig.data if t.name == "masked"]
    assert len(labels) == 1 and list(labels[0].text) == ["masked"] * 3


SIDE_BY_SIDE = figures.COLUMN_SHARES[2]


@pytest.mark.parametrize(
    ("tokens", "style", "says"),
    [
        (8, figures.DEFAULT_STYLE, True),
        (8, replace(figures.DEFAULT_STYLE, share=SIDE_BY_SIDE), False),
        (4, replace(figures.PRESENTER, share=SIDE_BY_SIDE), True),
        (6, replace(figures.PRESENTER, share=SIDE_BY_SIDE), False),
        (6, figures.PHONE, True),
    ],
)
def test_masked_is_written_only_where_it_keeps_a_gap_else_a_legend_says_it(tokens, style, says):
    """Side by side in a narrow plot, "masked" in 18 px touched its neighbours at 6 tokens (the book's): there the
    grey cells get a legend entry instead. A phone draws the chart wide enough and scrolls it."""
    mask = np.triu(np.ones((tokens, tokens), dtype=bool), k=1)
    pieces = [f"t{k}" for k in range(tokens)]
    fig = figures.heatmap(np.tril(np.ones((tokens, tokens))), pieces, pieces, title="w", masked=mask, style=style)
    words = [t for t in fig.data if t.name == "masked"]
    legend = [t for t in fig.data if t.name == "masked: a future key"]
    assert (len(words), len(legend)) == ((1, 0) if says else (0, 1))
    width = tokens * (len("masked") * figures.WORD_EM * style.label_size + figures.WORD_GAP_PX)
    plot = plot_width(style, pieces, colour_bar=True)
    assert says == (not style.shrink_text or width <= plot)
    assert fig.layout.showlegend is (None if says else True)


def test_heatmap_prints_cell_values_only_when_small():
    small = figures.heatmap(np.eye(4), list("abcd"), list("abcd"), title="small")
    assert small.data[0].texttemplate == "%{text}"
    labels = [str(i) for i in range(40)]
    large = figures.heatmap(np.eye(40), labels, labels, title="large")
    assert large.data[0].texttemplate is None
    assert "query %{customdata[0]}" in large.data[0].hovertemplate


def test_large_heatmaps_and_grids_count_queries_and_keys_from_1_on_hover():
    """The hover names query 1 · key 1 for the first cell (docs/book.md "Counting from 1"), not "query #0"."""
    labels = [str(i) for i in range(40)]
    large = figures.heatmap(np.eye(40), labels, labels, title="large")
    grid = figures.heatmap_grid(np.stack([np.eye(40)] * 2), ["head 1", "head 2"], labels, labels, title="g")
    for heat in (large.data[0], *[t for t in grid.data if t.type == "heatmap"]):
        assert "#%{y}" not in heat.hovertemplate and "#%{x}" not in heat.hovertemplate
        numbers = np.asarray(heat.customdata)
        assert numbers[0, 0].tolist() == [1, 1] and numbers[-1, -1].tolist() == [40, 40]
    assert "query %{customdata[0]} · key %{customdata[1]}" in grid.data[0].hovertemplate


def test_a_picked_large_heatmap_hovers_with_numbers_from_1_and_picks_python_indices():
    labels = [str(i) for i in range(40)]
    fig = figures.heatmap(np.eye(40), labels, labels, title="large", pickable=True)
    (cells,) = [t for t in fig.data if t.name == figures.PICK_TRACE]
    custom = np.asarray(cells.customdata)
    assert custom[0].tolist() == [0, 0, 1, 1]  # the picked (row, column) from 0, then the hover's from 1
    assert "query %{customdata[2]}<br>key %{customdata[3]}" in cells.hovertemplate


def test_block_labels_count_tokens_from_1():
    labels = [str(i) for i in range(400)]
    fig = figures.heatmap(np.eye(400), labels, labels, title="blocks")
    ticks = list(fig.layout.yaxis.ticktext)
    assert ticks[0] == "#1–3" and not any(t.startswith("#0") for t in ticks)
    assert "query block from %{customdata[0]}" in fig.data[0].hovertemplate


def test_heatmap_rejects_mismatched_labels():
    with pytest.raises(ValueError, match="labels"):
        figures.heatmap(np.eye(3), ["a"], ["a", "b", "c"], title="bad")


def test_bars_show_non_finite_values_as_text():
    fig = figures.bars({"naive": [np.nan, 1.0], "torch": [0.5, 0.5]}, ["a", "<b>"], title="t")
    assert list(fig.data[0].text)[0] == "nan"
    assert list(fig.data[0].y)[0] == 0.0
    assert list(fig.layout.xaxis.ticktext) == ["a", "&lt;b&gt;"]


def test_vote_bars_letter_the_choices_as_the_presenter_lists_them_and_show_them_as_written():
    choices = ("x^(1) “The”", "x^(2) “␣cat”", "<b>bold</b> & more")
    fig = figures.vote_bars(choices, [2, 0, 1], title="3 votes", style=figures.PRESENTER)
    (bars,) = fig.data
    labels = list(fig.layout.yaxis.ticktext)
    assert labels == ["A · x^(1) “The”", "B · x^(2) “␣cat”", "C · &lt;b&gt;bold&lt;/b&gt; &amp; more"]
    assert [html.unescape(label) for label in labels] == [f"{k} · {c}" for k, c in zip("ABC", choices, strict=True)]
    assert list(bars.x) == [2, 0, 1] and list(bars.y) == list(fig.layout.yaxis.tickvals) == [0, 1, 2]
    assert bars.orientation == "h" and fig.layout.yaxis.autorange == "reversed"  # A on top, as in the list
    assert min(fig.layout.yaxis.tickfont.size, bars.textfont.size) >= 18  # presenter mode: read from the back


def test_vote_bars_reject_counts_that_do_not_match_the_choices():
    with pytest.raises(ValueError, match="2 counts for 3 choices"):
        figures.vote_bars(("a", "b", "c"), [1, 2], title="t")


def test_stacked_contributions_sum_to_the_context_vector():
    contributions = np.array([[0.1, 0.2], [0.3, -0.1]])
    fig = figures.stacked_contributions(contributions, ["x", "y"], title="ctx")
    total = [t for t in fig.data if t.name == "context vector"][0]
    np.testing.assert_array_equal(total.y, contributions.sum(axis=0))  # the same numpy sum of the same array
    assert fig.layout.barmode == "relative"


def test_stacked_contributions_leave_room_above_the_bars_for_their_sums():
    """The sums' labels sit above the tallest bar: the y axis reaches a quarter of the bars' span higher, and the
    labels are not clipped to the plot area (on the book's numbers, "0.6515" was cut off by 10-12 px)."""
    contributions = np.array([[0.1, 0.4], [0.3, -0.1], [0.2, 0.3]])
    fig = figures.stacked_contributions(contributions, ["x", "y", "z"], title="ctx", style=figures.PRESENTER)
    total = [t for t in fig.data if t.name == "context vector"][0]
    low, high = fig.layout.yaxis.range
    assert low == pytest.approx(-0.1) and high == pytest.approx(0.7 + 0.25 * 0.8)  # positive blocks reach 0.7
    assert total.cliponaxis is False


def test_stacked_contributions_keep_the_largest_tokens_and_sum_the_rest():
    num_tokens = figures.STACKED_TOKEN_LIMIT + 40
    rng = np.random.default_rng(0)
    contributions = rng.normal(size=(num_tokens, 3)) * 0.01
    contributions[[5, 50]] *= 100  # two tokens that matter
    fig = figures.stacked_contributions(contributions, [f"t{j}" for j in range(num_tokens)], title="ctx")
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    assert len(bars) == figures.STACKED_TOKEN_LIMIT
    names = [b.name for b in bars]
    assert "6: t5" in names and "51: t50" in names  # counted from 1
    assert names[-1] == "other 41 tokens"
    # the "other" block is summed first: another order of the same float64 sum
    bound = summation_error(num_tokens, torch.from_numpy(np.abs(contributions).sum(axis=0)), torch.float64)
    drawn = torch.from_numpy(np.sum([b.y for b in bars], axis=0))
    assert within(drawn, torch.from_numpy(contributions.sum(axis=0)), bound)
    total = [t for t in fig.data if t.name == "context vector"][0]
    np.testing.assert_array_equal(total.y, contributions.sum(axis=0))  # the same numpy sum of the same array


def test_lines_and_grid_build():
    fig = figures.lines([1, 2, 4], {"a": [1, 2, 3]}, title="t", x_title="x", y_title="y", log_x=True)
    assert fig.layout.xaxis.type == "log"
    grid = figures.heatmap_grid(
        np.random.rand(5, 3, 3), [f"head {i}" for i in range(5)], list("abc"), list("abc"), title="heads", columns=3
    )
    assert sum(isinstance(t, go.Heatmap) for t in grid.data) == 5


def test_presenter_style_meets_the_projection_minimums():
    fig = figures.heatmap(np.eye(3), list("abc"), list("abc"), title="t", style=figures.PRESENTER)
    assert fig.layout.yaxis.tickfont.size >= 18
    assert fig.layout.title.font.size >= 22
    assert figures.PRESENTER.cell_text_size >= 18


def test_export_config_names_files_and_offers_png_and_svg():
    png = figures.export_config("causal mask/weights <1>")
    assert png["toImageButtonOptions"] == {"format": "png", "filename": "causal-mask-weights--1", "scale": 3}
    svg = figures.export_config("x", image_format="svg")
    assert svg["toImageButtonOptions"]["format"] == "svg"
    assert figures.export_config("x", image_format="exe")["toImageButtonOptions"]["format"] == "png"


def test_large_matrices_are_drawn_as_block_means_with_a_small_payload():
    size = 1024
    weights = np.tril(np.random.default_rng(0).random((size, size)))
    weights /= weights.sum(axis=1, keepdims=True)
    mask = np.triu(np.ones((size, size), dtype=bool), k=1)
    labels = [f"t{i}" for i in range(size)]
    fig = figures.heatmap(weights, labels, labels, title="big", masked=mask)
    z = np.asarray(fig.data[0].z, dtype=float)
    block = int(np.ceil(size / figures.DEFAULT_STYLE.max_cells_per_axis))
    assert z.shape == (int(np.ceil(size / block)),) * 2
    # the figure sends float32: its float64 block mean (block² terms, ~1e-15) rounded once, half an eps
    expected = weights[:block, :block][~mask[:block, :block]].mean()
    np.testing.assert_allclose(z[0, 0], expected, rtol=EPS32 / 2 + block**2 * np.finfo(np.float64).eps)
    assert np.isnan(z[0, -1]), "a block that is all masked stays blank"
    assert len(fig.to_json()) < 2_000_000 / 4


def test_token_window_slices_token_axes_and_keeps_positions():
    size = 100
    data = np.arange(size * 5, dtype=float).reshape(size, 5)
    style = figures.FigureStyle(token_window=(40, 50))
    fig = figures.heatmap(
        data, [f"t{i}" for i in range(size)], [f"d{k}" for k in range(5)], title="w", col_tokens=False, style=style
    )
    np.testing.assert_array_equal(np.asarray(fig.data[0].z, dtype=float), data[40:50])
    assert list(fig.data[0].y) == list(range(40, 50))
    assert list(fig.layout.yaxis.ticktext)[0] == "t40"
    assert list(fig.layout.xaxis.ticktext) == [f"d{k}" for k in range(5)]


def test_many_column_labels_stand_upright_below_the_axis_title_and_the_figure_title():
    few = figures.heatmap(np.eye(6), list("abcdef"), list("abcdef"), title="t")
    assert few.layout.xaxis.tickangle is None and few.layout.xaxis.title.standoff == 4
    pieces = [f" token{j}" for j in range(figures.ROTATED_TICKS + 1)]
    many = figures.heatmap(np.eye(len(pieces)), pieces, pieces, title="t")
    assert list(many.layout.xaxis.autotickangles) == [0, -90], "lying down where they fit, else upright"
    assert many.layout.xaxis.title.standoff > few.layout.xaxis.title.standoff
    longest = 0.6 * figures.DEFAULT_STYLE.tick_size * len(" token0")
    assert many.layout.margin.t > few.layout.margin.t + longest, "room above the plot for upright labels"


def test_token_labels_thin_out_to_what_the_heatmaps_height_fits():
    pieces = [f" t{j}" for j in range(58)]
    shown = {}
    for style in (figures.DEFAULT_STYLE, figures.PRESENTER):
        fig = figures.heatmap(np.eye(58), pieces, pieces, title="t", style=style)
        rows, cols = len(fig.layout.yaxis.ticktext), len(fig.layout.xaxis.ticktext)
        assert rows * 1.3 * style.tick_size <= fig.layout.height  # no label over the next
        assert cols * 1.3 * style.tick_size <= 200, "column labels fit the narrowest plot (three side by side)"
        shown[style.tick_size] = rows
        few = figures.heatmap(np.eye(8), pieces[:8], pieces[:8], title="t", style=style)
        assert list(few.layout.yaxis.ticktext) == [figures.token_label(p) for p in pieces[:8]]
    assert shown[figures.PRESENTER.tick_size] < shown[figures.DEFAULT_STYLE.tick_size]


@pytest.mark.parametrize("tokens", [6, 12, 27, 28, 30])
@pytest.mark.parametrize("kind", ["mask", "weights"])
def test_row_labels_and_cell_values_fit_the_plot_area_the_margins_leave(tokens, kind):
    """In presenter mode each labelled row, and each row with printed values, gets 1.3 lines of the plot area that
    the figure's height leaves under its top margin (title, column labels) and above its legend. A mask's legend
    takes two lines beside another chart: counted as one, the rows of Causal mask step 2 ran together at 28 tokens."""
    style = figures.PRESENTER
    pieces = [f"␣word{k}" for k in range(tokens)]
    future = np.triu(np.ones((tokens, tokens), dtype=bool), k=1)
    values = future.astype(float) if kind == "mask" else np.tril(np.ones((tokens, tokens))) / tokens
    fig = figures.heatmap(values, pieces, pieces, title="m", kind=kind, masked=None if kind == "mask" else future,
                          style=style)  # fmt: skip
    legend = 78 * style.font_size / 20 if kind == "mask" else 0  # two lines of legend: 78 px at 20 px in Chromium
    plot_height = fig.layout.height - fig.layout.margin.t - max(fig.layout.margin.b, legend)  # plotly makes room
    ticks = fig.layout.yaxis.tickvals
    assert (ticks[1] - ticks[0]) * plot_height / tokens >= 1.3 * style.tick_size
    if fig.data[0].texttemplate:
        assert plot_height / tokens >= 1.3 * style.cell_text_size
