"""Every figure builder skips plotly's validation at run time (``figures.figure``), so these tests
validate what each one writes: plotly's validator accepts it and leaves it as it is, and a builder
makes its figure in one unvalidated constructor call, never through plotly's validating ``update_*``,
``add_*`` or ``make_subplots``."""

import json
from contextlib import ExitStack
from dataclasses import replace
from types import SimpleNamespace
from unittest.mock import patch

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import plotly.subplots
import pytest
from plotly.basedatatypes import BaseFigure

from attention import figures
from attention.figures import charts, figure, subplot_grid

TOKENS = ["<b>", "&amp;", " ", "\n", "dup", "dup", "<a href='x'>y</a>", " step"]
RNG = np.random.default_rng(0)


def tokens(count: int) -> list[str]:
    return [TOKENS[i % len(TOKENS)] for i in range(count)]


def future(count: int) -> np.ndarray:
    return np.triu(np.ones((count, count), dtype=bool), 1)


def weights(count: int, causal: bool = True) -> np.ndarray:
    scores = RNG.normal(size=(count, count))
    if causal:
        scores = np.where(future(count), -np.inf, scores)
    exp = np.exp(scores - scores.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def scores(count: int, cols: int | None = None) -> np.ndarray:
    return RNG.normal(size=(count, cols or count))


CURVE = SimpleNamespace(
    d_ks=np.array([1, 4, 16, 64]),
    right_max_weight=np.array([0.3, 0.35, 0.34, 0.3]),
    wrong_max_weight=np.array([0.3, 0.6, 0.9, 1.0]),
    right_grad_norm=np.array([0.3, 0.3, 0.3, 0.3]),
    wrong_grad_norm=np.array([0.3, 0.2, 0.05, 0.01]),
    right_param_grad=np.array([1.5, 1.6, 1.6, 1.6]),
    wrong_param_grad=np.array([1.5, 0.4, 0.01, 1e-4]),
    num_keys=8,
)
SERIES = {"book <b>": [1e-3, 2e-3, 8e-3, 0.1], "fast": np.array([1e-3, 1e-3, 3e-3, 0.02]), "T² ref": [1, 2, 3, 4]}


def nan_rows(matrix: np.ndarray, rows) -> np.ndarray:
    wrong = matrix.copy()
    wrong[rows] = np.nan
    return wrong


def keep(count: int) -> np.ndarray:
    return RNG.random((count, count)) > 0.4


BUILDERS = {
    "heatmap: weights, masked, highlighted row": lambda: figures.heatmap(
        np.where(future(6), 0, weights(6)),
        tokens(6),
        tokens(6),
        title="w <i>",
        value_name="attention weight",
        masked=future(6),
        highlight_row=2,
        meaning="a <b> meaning",
    ),
    "heatmap: masked scores": lambda: figures.heatmap(
        np.where(future(8), -np.inf, scores(8)),
        tokens(8),
        tokens(8),
        title="s",
        value_name="score",
        kind="signed",
        masked=future(8),
        decimals=3,
        style=figures.PRESENTER,
    ),
    "heatmap: a mask": lambda: figures.heatmap(
        future(9).astype(float), tokens(9), tokens(9), title="mask", kind="mask", value_name="mask", decimals=0
    ),
    "heatmap: a mask with its legend renamed": lambda: figures.heatmap(
        future(5).astype(float),
        tokens(5),
        tokens(5),
        title="mask",
        kind="mask",
        legend_names={"x": "y"},
    ),
    "heatmap: shared range, plain column labels": lambda: figures.heatmap(
        scores(6, 4),
        tokens(6),
        [f"dim {k}" for k in range(4)],
        title="v",
        col_title="dimension",
        col_tokens=False,
        value_range=(-3.0, 3.0),
        kind="signed",
    ),
    "heatmap: 64 tokens": lambda: figures.heatmap(
        weights(64),
        tokens(64),
        tokens(64),
        title="w",
        value_name="attention weight",
        masked=future(64),
        highlight_row=10,
    ),
    "heatmap: block means": lambda: figures.heatmap(
        weights(300), tokens(300), tokens(300), title="w", value_name="attention weight", style=figures.PRESENTER
    ),
    "heatmap: token window": lambda: figures.heatmap(
        weights(60),
        tokens(60),
        tokens(60),
        title="w",
        value_name="attention weight",
        highlight_row=12,
        style=replace(figures.DEFAULT_STYLE, token_window=(10, 30)),
    ),
    "heatmap, one dropout draw: words": lambda: figures.heatmap(
        np.where(future(6), 0, weights(6) * 2), tokens(6), tokens(6), title="d", masked=future(6), dropped=~keep(6)
    ),
    "heatmap, one dropout draw: crosses": lambda: figures.heatmap(
        np.where(future(20), 0, weights(20)), tokens(20), tokens(20), title="d", masked=future(20), dropped=~keep(20)
    ),
    "heatmap, one dropout draw: block means": lambda: figures.heatmap(
        weights(400), tokens(400), tokens(400), title="d", value_range=(0, 2), dropped=~keep(400)
    ),
    "without_cell_text": lambda: figures.without_cell_text(
        figures.heatmap(weights(6), tokens(6), tokens(6), title="w", value_name="weight", masked=future(6))
    ),
    "heatmap_grid: 2 small heads": lambda: figures.heatmap_grid(
        np.stack([weights(6), weights(6)]),
        ["head 0 <b>", "head 1"],
        tokens(6),
        tokens(6),
        title="heads",
        masked=future(6),
        columns=2,
    ),
    "heatmap_grid: 12 heads, 3 rows": lambda: figures.heatmap_grid(
        np.stack([weights(20) for _ in range(12)]),
        [f"head {k}" for k in range(12)],
        tokens(20),
        tokens(20),
        title="heads",
        columns=4,
        max_row_height=200,
        style=figures.PRESENTER,
    ),
    "heatmap_grid: 4 heads in 3 columns, a blank subplot": lambda: figures.heatmap_grid(
        np.abs(scores(5)[None].repeat(4, axis=0)),
        ["a", "", "c", "d"],
        tokens(5),
        tokens(5),
        title="g",
    ),
    "every_head_grid: 3 layers × 2 heads, outlined": lambda: charts.every_head_grid(
        np.stack([np.stack([weights(8), weights(8)]) for _ in range(3)]),
        [["prev 0.62 <b>", "first 0.80"]] * 3,
        [["all three", "numbers"]] * 3,
        tokens(8),
        title="grid",
        current=(2, 1),
        style=figures.PRESENTER,
    ),
    "bars: one series, highlighted": lambda: figures.bars(
        {"weight <b>": weights(6, causal=False)[0]}, tokens(6), title="b", meaning="m", highlight=2, extra_height=70
    ),
    "bars: three series with nan and inf": lambda: figures.bars(
        {"a": scores(1, 20)[0], "b": np.full(20, np.inf), "c": np.r_[np.nan, np.ones(19)]},
        tokens(20),
        title="b",
        style=figures.PRESENTER,
    ),
    "vote_bars": lambda: figures.vote_bars(
        ["x^(1) “<b>”", "x^(2) “␣cat”", "It stays the same"], [3, 0, 1], title="4 votes", style=figures.PRESENTER
    ),
    "dot_product_bars": lambda: figures.dot_product_bars(
        scores(1, 6)[0], tokens(6), np.ones(3), RNG.normal(size=(6, 3)), query=1, title="dot"
    ),
    "stacked_contributions: few tokens": lambda: figures.stacked_contributions(
        RNG.normal(size=(6, 3)), tokens(6), title="ctx"
    ),
    "stacked_contributions: many tokens": lambda: figures.stacked_contributions(
        RNG.normal(size=(40, 20)), tokens(40), title="ctx", style=figures.PRESENTER
    ),
    "lines": lambda: figures.lines([1, 4, 16, 64], SERIES, title="l", x_title="T", y_title="ms <i>"),
    "lines: ticks, range and height": lambda: figures.lines(
        [1, 4, 16, 64],
        SERIES,
        title="l",
        x_title="d_k",
        y_title="y",
        log_x=True,
        x_ticks=(1, 4, 16, 64),
        y_range=(0, 1.05),
        extra_height=70,
    ),
    "lines: log axes, dashed": lambda: figures.lines(
        np.array([1, 4, 16, 64]),
        SERIES,
        title="l",
        x_title="T",
        y_title="ms",
        log_x=True,
        log_y=True,
        dashed=("T² ref",),
    ),
    "lines, measured": lambda: figures.lines(
        [1, 4, 16, 64], SERIES, title="m", x_title="T", y_title="ms", dashed=("T² ref", "fast"), measured=True
    ),
    "agreement": lambda: figures.agreement(
        weights(6), weights(6), title="a", reference_name="book <b>", other_name="fast"
    ),
    "agreement: empty": lambda: figures.agreement(
        np.zeros(0), np.zeros(0), title="e", reference_name="a", other_name="b"
    ),
    "head_summary_bars": lambda: charts.head_summary_bars(
        {"previous <b>": [0.1, 0.5, 1.2], "self": [0.3, -0.1, 0.2]}, title="heads", style=figures.PRESENTER
    ),
    "right_and_wrong: NaN rows": lambda: charts.right_and_wrong(
        weights(6), nan_rows(weights(6), [3, 4]), tokens(6), future=future(6), title="rw <b>"
    ),
    "right_and_wrong: thin rows": lambda: charts.right_and_wrong(
        weights(30),
        nan_rows(weights(30), [0, 28, 29]),
        tokens(30),
        future=future(30),
        title="rw",
        zmax=2.0,
        style=figures.PRESENTER,
    ),
    "right_and_wrong: block means": lambda: charts.right_and_wrong(
        weights(300), nan_rows(weights(300), [5]), tokens(300), future=future(300), title="rw"
    ),
    "saturation: max weight, this d_k": lambda: charts.saturation(
        CURVE, stat="max_weight", wrong_name="no <b>", head_dim=16
    ),
    "saturation: gradient": lambda: charts.saturation(CURVE, stat="grad_norm", wrong_name="÷ d_k"),
    "saturation: parameters' gradient": lambda: charts.saturation(CURVE, stat="param_grad", wrong_name="no scaling"),
}


def as_json(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig))


def validated(fig: go.Figure) -> go.Figure:
    """``fig`` rebuilt through plotly's validator: raises ValueError on any property plotly does not know."""
    return go.Figure(fig.to_dict())


@pytest.mark.parametrize("name", BUILDERS)
def test_plotly_validates_what_each_builder_writes_and_changes_nothing(name):
    fig = BUILDERS[name]()
    assert isinstance(fig, go.Figure)
    assert as_json(validated(fig)) == as_json(fig)


def test_the_check_catches_a_misspelt_property():
    with pytest.raises(ValueError, match="xaxsi"):
        validated(figure([], {"xaxsi": {"title": {"text": "keys"}}}))
    with pytest.raises(ValueError, match="zmni"):
        validated(figure([{"type": "heatmap", "z": [[1.0]], "zmni": 0}], {}))


VALIDATING = ["update_layout", "update_xaxes", "update_yaxes", "update_traces", "update_annotations"]
VALIDATING += ["add_trace", "add_traces", "add_shape", "add_annotation", "add_vrect", "add_vline", "add_hline"]


@pytest.mark.parametrize("name", BUILDERS)
def test_each_builder_makes_one_unvalidated_figure_and_calls_no_validating_method(name):
    constructed = []
    original = BaseFigure.__init__

    def spy(self, *args, **kwargs):
        constructed.append(kwargs.get("_validate", True))
        original(self, *args, **kwargs)

    with ExitStack() as stack:
        for method in VALIDATING:
            stack.enter_context(patch.object(go.Figure, method, side_effect=AssertionError(method)))
        for trace in ("Heatmap", "Scatter", "Bar"):  # validated trace objects
            stack.enter_context(patch.object(go, trace, side_effect=AssertionError(trace)))
        stack.enter_context(patch.object(plotly.subplots, "make_subplots", side_effect=AssertionError("subplots")))
        stack.enter_context(patch.object(BaseFigure, "__init__", spy))
        BUILDERS[name]()
    count = 2 if name == "without_cell_text" else 1  # the figure, then its copy without the numbers
    assert constructed == [False] * count


def test_without_cell_text_returns_a_figure_without_cell_text_as_it_is():
    fig = figures.heatmap(weights(20), tokens(20), tokens(20), title="w", value_name="attention weight")
    with patch.object(BaseFigure, "__init__", side_effect=AssertionError("copied")):
        assert figures.without_cell_text(fig) is fig


def test_figure_arrays_are_read_only_as_the_validator_leaves_them():
    fig = figures.heatmap(weights(6), tokens(6), tokens(6), title="w", value_name="attention weight")
    with pytest.raises(ValueError, match="read-only"):
        fig.data[0].z[0, 0] = 1.0


@pytest.mark.parametrize(
    ("rows", "cols", "horizontal", "vertical", "shared"),
    [(1, 2, 0.1, 0.0, False), (2, 3, 0.03, 0.1, True), (3, 4, 0.03, 0.08, True), (4, 1, 0.03, 0.07, True)],
)
def test_subplot_grid_lays_out_what_make_subplots_would(rows, cols, horizontal, vertical, shared):
    titles = [f"panel {k}" for k in range(rows * cols - 1)] + [""]  # the last one untitled
    axes, annotations = subplot_grid(
        rows,
        cols,
        titles,
        figures.DEFAULT_STYLE,
        horizontal_spacing=horizontal,
        vertical_spacing=vertical,
        shared_yaxes=shared,
    )
    made = plotly.subplots.make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        horizontal_spacing=horizontal,
        vertical_spacing=vertical,
        shared_yaxes=shared,
    ).layout.to_plotly_json()
    assert axes == {name: made[name] for name in made if name.startswith(("xaxis", "yaxis"))}
    font = {"size": figures.DEFAULT_STYLE.font_size}
    assert annotations == [{**note, "font": font} for note in made.get("annotations", [])]


def test_builder_options_replace_what_pages_changed_after_building():
    """``lines``' ticks, y range and height, ``bars``' height and ``heatmap``'s legend names: the options
    that let a page's figure be shared instead of changed after it is built."""
    lines = figures.lines(
        [1, 4, 16, 64], SERIES, title="l", x_title="d_k", y_title="y", log_x=True, x_ticks=[1, 4, 16, 64]
    )
    shaped = figures.lines(
        [1, 4, 16, 64], SERIES, title="l", x_title="d_k", y_title="y", y_range=(0, 1.05), extra_height=70
    )
    assert list(lines.layout.xaxis.tickvals) == [1, 4, 16, 64] and lines.layout.xaxis.dtick == 1
    assert list(shaped.layout.yaxis.range) == [0, 1.05]
    assert shaped.layout.height == figures.DEFAULT_STYLE.min_height + 70 != lines.layout.height
    bars = figures.bars({"w": [0.5, 0.5]}, ["a", "b"], title="b", extra_height=70)
    assert bars.layout.height == figures.DEFAULT_STYLE.min_height + 70
    mask = np.tril(np.ones((3, 3)))
    plain = figures.heatmap(mask, list("abc"), list("abc"), title="m", kind="mask")
    names = {trace.name: f"renamed {trace.name}" for trace in plain.data if trace.name}
    assert names
    renamed = figures.heatmap(mask, list("abc"), list("abc"), title="m", kind="mask", legend_names=names)
    assert [t.name for t in renamed.data] == [names.get(t.name, t.name) for t in plain.data]
