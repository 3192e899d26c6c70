"""Figures built once for every session (``explorer.widgets.charts``, issue 15, scope 2): keyed by the contents of
what they show."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import plotly.tools
import pytest
from apptest_support import app, figure_specs
from plotly.basedatatypes import BaseFigure, BasePlotlyType

from attention import figures
from explorer.widgets import charts
from explorer.widgets.charts import UnhashableError, fingerprint, shared

BUILDS = []


def counted_heatmap(*args, **options):
    """``figures.heatmap``, counting its calls."""
    BUILDS.append(args)
    return figures.heatmap(*args, **options)


def figure_of(drawn: charts.Drawn) -> go.Figure:
    """A kept figure made back from its JSON."""
    return go.Figure(json.loads(drawn.spec), _validate=False)


@pytest.fixture(autouse=True)
def empty_cache():
    charts.FIGURES.clear()
    BUILDS.clear()
    yield
    charts.FIGURES.clear()


def test_fingerprint_follows_contents_not_identity():
    z = np.arange(6.0).reshape(2, 3)
    assert fingerprint(z, ["a", "b"], {"title": "t"}) == fingerprint(z.copy(), ["a", "b"], {"title": "t"})
    changed = z.copy()
    changed[1, 2] += 1e-9
    different = [
        changed,
        z.astype(np.float32),
        z.reshape(3, 2),
        z.T.copy(),
    ]
    assert len({fingerprint(v) for v in [z, *different]}) == 5
    assert fingerprint(1) != fingerprint(1.0) != fingerprint(True)
    assert fingerprint({"a": 1}) != fingerprint({"a": 2}) != fingerprint({"b": 1})
    assert fingerprint(figures.DEFAULT_STYLE) != fingerprint(figures.PRESENTER)
    windowed = dataclasses.replace(figures.DEFAULT_STYLE, token_window=(0, 10))
    assert fingerprint(windowed) != fingerprint(figures.DEFAULT_STYLE)
    with pytest.raises(UnhashableError):
        fingerprint(object())


def test_a_figure_is_built_once_for_equal_calls():
    z = np.eye(3)
    first = shared(counted_heatmap, z, ["a", "b", "c"], ["a", "b", "c"], title="w")
    again = shared(counted_heatmap, z.copy(), ["a", "b", "c"], ["a", "b", "c"], title="w")
    assert again is first and len(BUILDS) == 1
    other = shared(counted_heatmap, z, ["a", "b", "c"], ["a", "b", "c"], title="w", style=figures.PRESENTER)
    assert other is not first and len(BUILDS) == 2
    bare = shared(counted_heatmap, z, ["a", "b", "c"], ["a", "b", "c"], title="w", cell_text=False)
    assert figure_of(bare).data[0].text is None and figure_of(first).data[0].text is not None


def test_shared_numbers_cannot_be_written():
    drawn = shared(counted_heatmap, np.eye(3), ["a", "b", "c"], ["a", "b", "c"], title="w")
    values = drawn.tables[0]["values"]
    with pytest.raises(ValueError):
        values[0, 0] = 5.0


def test_unhashable_arguments_build_for_the_call_alone():
    class Opaque:
        pass

    def builder(thing, **options):
        BUILDS.append(thing)
        return figures.heatmap(np.eye(2), ["a", "b"], ["a", "b"], title="x")

    shared(builder, Opaque())
    shared(builder, Opaque())
    assert len(BUILDS) == 2 and len(charts.FIGURES) == 0


def test_two_sessions_on_one_view_share_its_figures():
    """A second student on the same page and step builds no figure and sees the same numbers."""

    first = app("pages/causal_mask.py")
    kept = len(charts.FIGURES)
    assert kept >= 1
    second = app("pages/causal_mask.py")
    assert len(charts.FIGURES) == kept
    assert figure_specs(first) == figure_specs(second) != []


def test_kept_figures_hold_no_plotly_objects():
    """Plotly objects are hundreds of Python objects each, which Streamlit's full garbage collection after
    every run would walk: a kept figure is its JSON and its numbers, and each draw makes its own figure."""
    drawn = shared(counted_heatmap, np.eye(3), ["a", "b", "c"], ["a", "b", "c"], title="w")

    def plotly_objects(value) -> int:
        if isinstance(value, BasePlotlyType | BaseFigure):
            return 1
        if isinstance(value, dict):
            return sum(plotly_objects(v) for v in value.values())
        if isinstance(value, list | tuple):
            return sum(plotly_objects(v) for v in value)
        return 0

    assert plotly_objects([drawn.spec, drawn.tables, drawn.title]) == 0
    chart = charts.EncodedFigure(drawn.spec)
    assert chart.to_dict() is not chart.to_dict()  # each draw gets its own
    built = counted_heatmap(np.eye(3), ["a", "b", "c"], ["a", "b", "c"], title="w")
    assert json.loads(pio.to_json(figure_of(drawn))) == json.loads(pio.to_json(built))


def test_st_plotly_chart_gets_the_same_figure_from_the_json():
    drawn = shared(counted_heatmap, np.eye(3), ["<b>", "a", "a"], ["<b>", "a", "a"], title="w", masked=np.eye(3) > 0)
    given = plotly.tools.return_figure_from_figure_or_data(charts.EncodedFigure(drawn.spec), validate_figure=True)
    whole = plotly.tools.return_figure_from_figure_or_data(figure_of(drawn), validate_figure=True)
    assert json.loads(pio.to_json(given, validate=False)) == json.loads(pio.to_json(whole, validate=False))


SIDE_BY_SIDE_VIEWS = [
    ("pages/qkv.py", step)  # every Q, K, V step draws its figures side by side
    for step in (
        "projection-weights",
        "queries-keys-values",
        "scaled-scores",
        "weights-and-context",
        "saturation",
        "gradients",
        "v1-equals-v2",
    )
] + [
    ("pages/tokens.py", "embeddings"),
    ("pages/causal_mask.py", "the-mask"),
    ("pages/why_attention.py", "trained-bottleneck"),
]


@pytest.mark.parametrize(("page", "step"), SIDE_BY_SIDE_VIEWS)
def test_a_second_student_on_a_view_builds_no_figure(page, step, monkeypatch):
    """Every figure of these views (side-by-side panels, the embeddings, mask_simple, the bottleneck curve)
    is shared: a second session on the same view prepares nothing and sees the same figures."""
    first = app(page, query_params={"step": step})
    prepared = []
    prepare = charts.prepare
    monkeypatch.setattr(charts, "prepare", lambda *a, **k: prepared.append(a) or prepare(*a, **k))
    second = app(page, query_params={"step": step})
    assert not second.exception
    assert prepared == []
    assert figure_specs(first) == figure_specs(second) != []


def test_a_heatmap_prints_the_cell_values_that_fit_its_share_of_the_width():
    """``side_by_side`` gives each panel its column's share of the width; the heatmap prints the values that fit
    it, after a token window has narrowed token columns (not d_out ones), as ``figures.fit_matrix`` does."""
    z = np.full((20, 20), 0.05)
    labels = [f"t{i}" for i in range(20)]
    half = dataclasses.replace(figures.DEFAULT_STYLE, share=figures.COLUMN_SHARES[2])
    window = dataclasses.replace(half, token_window=(4, 10))

    def printed(style, **options):
        return figures.heatmap(z, labels, labels, title="w", kind="weights", style=style, **options).data[0].text

    assert printed(half) is None  # 20 columns in half the width: the hover has them
    assert printed(window) is not None and np.shape(printed(window)) == (6, 6)
    assert printed(window, col_tokens=False) is None  # 20 d_out columns stay 20


def test_a_rerun_finds_its_charts_by_their_contents_and_builds_none(monkeypatch):
    """A Next click back to a step this session drew finds its charts in the shared figures (``charts.shared``)
    and builds none, and the charts still join the step's JSON export. A new sentence builds new ones."""
    from apptest_support import next_step, previous_step, runs_recorded, type_sentence

    runs = runs_recorded(monkeypatch)
    at = app("pages/causal_mask.py")
    at = previous_step(next_step(next_step(at)))  # steps 1, 2, 3 and back to 2: step 3's charts are drawn
    assert not at.exception
    calls = []
    prepare = charts.prepare
    monkeypatch.setattr(charts, "prepare", lambda *args, **options: calls.append(args) or prepare(*args, **options))
    before = figure_specs(at)
    at = next_step(at)  # step 3 again
    assert not at.exception
    assert calls == []  # no chart built: each was found by its numbers, labels and options
    assert len(runs[-1].figures) == 2  # both of step 3's heatmaps are in its JSON export
    again = previous_step(next_step(previous_step(at)))
    assert [json.dumps(s, sort_keys=True) for s in figure_specs(again)] == [
        json.dumps(s, sort_keys=True) for s in before
    ]
    at = type_sentence(at, "A new sentence draws new charts")
    assert not at.exception
    assert calls  # the new sentence's numbers are new: its charts are built
