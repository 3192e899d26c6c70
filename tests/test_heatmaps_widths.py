"""``figures.heatmaps.readable_width``: how wide a figure must be for its texts to stay apart (a phone scrolls)."""

import numpy as np

from attention import figures
from attention.figures.heatmaps import LABEL_PITCH_PX


def test_a_heatmap_of_numbers_needs_room_for_its_longest_number_in_every_column():
    values = np.linspace(-0.9, 0.9, 6 * 16).reshape(6, 16)
    fig = figures.heatmap(values, [f"t{i}" for i in range(6)], [f"h{j}" for j in range(16)], title="t", kind="signed")
    width = figures.readable_width(fig)
    assert width > 16 * len("-0.90") * 7  # far wider than a 390 px phone
    narrow = figures.heatmap(values[:, :3], [f"t{i}" for i in range(6)], ["a", "b", "c"], title="t", kind="signed")
    assert figures.readable_width(narrow) < width
    assert figures.readable_width(figures.without_cell_text(fig)) < width  # only the labels' pitch is left


def test_two_panels_side_by_side_need_twice_the_width_of_one():
    one = figures.readable_width(figures.heatmap(np.eye(8), list("abcdefgh"), list("abcdefgh"), title="t"))
    fig = figures.heatmap(np.eye(8), list("abcdefgh"), list("abcdefgh"), title="t")
    fig.update_layout(xaxis={"domain": [0, 0.5]})
    assert figures.readable_width(fig) > one
    assert one > 8 * LABEL_PITCH_PX


def test_a_chart_without_heatmaps_or_tick_labels_needs_nothing():
    fig = figures.lines([1, 2, 3], {"a": [1.0, 2.0, 3.0]}, title="t", x_title="x", y_title="y")
    assert figures.readable_width(fig) == 0


def test_a_phones_larger_text_needs_more_room():
    values = np.linspace(0, 1, 36).reshape(6, 6)
    labels = [f"t{i}" for i in range(6)]
    fig = figures.heatmap(values, labels, labels, title="t", style=figures.PHONE)
    assert figures.readable_width(fig) > figures.readable_width(figures.heatmap(values, labels, labels, title="t"))


def test_thirty_standing_token_labels_need_a_line_each_on_a_phone():
    pieces = [f"token{i}" for i in range(30)]
    small = figures.bars({"s": np.linspace(0, 1, 30)}, pieces, title="t", value_name="share")
    large = figures.bars({"s": np.linspace(0, 1, 30)}, pieces, title="t", value_name="share", style=figures.PHONE)
    assert large.layout.xaxis.tickangle == -90 and large.layout.xaxis.tickfont.size == 16
    shown = len(large.layout.xaxis.tickvals)
    assert figures.readable_width(large) >= shown * 16 * 1.5 > 358  # wider than a phone: it scrolls sideways
    assert figures.readable_width(small) < figures.readable_width(large)


def test_a_legend_beside_the_plot_adds_its_names_width():
    series = {"with the cache": [1.0, 2.0, 3.0], "without the cache": [2.0, 4.0, 8.0]}
    fig = figures.lines([10, 20, 40], series, title="t", x_title="x", y_title="y", measured=True, style=figures.PHONE)
    beside = figures.readable_width(fig)
    fig.update_layout(legend={"orientation": "h", "x": 0})
    assert beside - figures.readable_width(fig) >= len("without the cache") * 10


def test_every_text_of_the_phone_style_is_at_least_16_px():
    style = figures.PHONE
    sizes = (style.font_size, style.tick_size, style.title_size, style.cell_text_size, style.label_size)
    assert min(sizes) >= 16


def test_grouped_bars_keep_their_values_whole_on_a_phone_and_get_the_room():
    from attention.figures.charts import head_summary_bars

    shares = {name: [0.2, 0.35, 0.4, 0.25] for name in ("previous", "first", "spread")}
    phone = head_summary_bars(shares, title="t", style=figures.PHONE)
    laptop = head_summary_bars(shares, title="t")
    assert {t.constraintext for t in phone.data} == {"none"} and {t.constraintext for t in laptop.data} == {"both"}
    assert figures.readable_width(phone) >= 4 * 3 * (len("0.35") * 10 + 8)  # 12 values of 16 px side by side
    assert figures.readable_width(laptop) == 0  # plotly fits them to the bars there
