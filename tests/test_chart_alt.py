"""Every chart has a text alternative (issue 26): a screen reader hears its title, what each trace shows, its
size and its range (``figures.figure_alt``), carried by ``st.plotly_chart(alt=...)``."""

import html
import json

import numpy as np
import pytest
from apptest_support import app, next_step

from attention.figures import figure_alt


def test_a_heatmap_alt_says_its_title_size_labels_and_range():
    table = {"type": "heatmap", "name": "", "rows": ["Your", "journey"], "cols": ["Your", "journey", "starts"]}
    table["values"] = np.array([[0.5, -np.inf, np.nan], [0.25, 0.75, 0.125]])
    said = figure_alt("attn_weights", [table])
    assert said == (
        "attn_weights. Heatmap: 2 rows (Your to journey) by 3 columns (Your to starts), values from 0.125 to 0.75."
    )


def test_the_highlighted_row_is_read_out_with_its_numbers():
    table = {"type": "heatmap", "name": "", "rows": ["Your", "journey"], "cols": ["Your", "journey"]}
    table["values"] = np.array([[1.0, -np.inf], [0.4, 0.6]])
    said = figure_alt("attn_weights", [table], [1])
    assert said.endswith("Highlighted row journey: 0.4, 0.6.")
    assert "Highlighted row Your: 1, masked." in figure_alt("attn_weights", [table], [0])
    assert "Highlighted" not in figure_alt("attn_weights", [table], [None])


def test_a_drawn_heatmap_with_an_inspected_query_reads_that_row():
    from attention import figures
    from explorer.widgets.charts import prepare

    weights = np.array([[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.2, 0.3, 0.5]])
    fig = figures.heatmap(weights, ["Your", "journey", "starts"], ["Your", "journey", "starts"], title="w",
                          highlight_row=2)  # fmt: skip
    assert prepare(fig).alt.endswith("Highlighted row starts: 0.2, 0.3, 0.5.")


def test_bars_and_an_untitled_chart_are_described_too():
    said = figure_alt("", [{"type": "bar", "name": "probability", "values": np.array([0.5, 0.25])}])
    assert said == "A chart. Bar chart probability: 2 values, values from 0.25 to 0.5."


@pytest.mark.parametrize(("page", "steps"), [("causal_mask", 0), ("multihead", 1), ("why_attention", 2)])
def test_every_chart_on_a_step_carries_its_alt(page, steps):
    at = app(f"pages/{page}.py")
    for _ in range(steps):
        next_step(at)
    charts = at.get("plotly_chart")
    assert charts
    for chart in charts:
        spec = json.loads(chart.proto.spec)
        title = html.unescape((spec["layout"].get("title") or {}).get("text") or "A chart")
        assert chart.proto.alt.startswith(title), (chart.proto.alt, title)
        assert "values from" in chart.proto.alt
