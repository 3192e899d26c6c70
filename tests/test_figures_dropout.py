"""``figures.heatmap(dropped=...)``: one dropout draw with dropped and masked cells told apart."""

import numpy as np

from attention import figures

FUTURE = np.triu(np.ones((4, 4), dtype=bool), 1)
KEEP = np.array([[1, 0, 1, 1], [0, 1, 0, 1], [1, 1, 0, 1], [1, 0, 1, 1]], dtype=bool)
WEIGHTS = np.tril(np.full((4, 4), 0.5)) * KEEP * 2  # survivors doubled, as with p = 0.5


def labelled(fig, name: str) -> set[tuple[int, int]]:
    traces = [t for t in fig.data if t.type == "scatter" and t.name == name]
    return {(y, x) for t in traces for x, y in zip(t.x, t.y, strict=True)}


def test_dropped_and_masked_cells_are_blank_and_labelled_apart():
    tokens = ["a", "<b>", "a", "c"]
    fig = figures.heatmap(WEIGHTS, tokens, tokens, title="after dropout", masked=FUTURE, dropped=~KEEP)
    z = np.asarray(fig.data[0].z, dtype=float)
    dropped = ~KEEP & ~FUTURE
    assert np.isnan(z[FUTURE | dropped]).all()
    np.testing.assert_array_equal(z[~FUTURE & KEEP], WEIGHTS[~FUTURE & KEEP].astype(np.float32))  # sent as float32
    assert labelled(fig, "dropped") == {tuple(cell) for cell in np.argwhere(dropped)}
    assert labelled(fig, "masked") == {tuple(cell) for cell in np.argwhere(FUTURE)}
    texts = {t.name: set(t.text) for t in fig.data if t.type == "scatter"}
    assert texts == {"masked": {"masked"}, "dropped": {"dropped"}}
    assert list(fig.layout.yaxis.ticktext) == ["a", "&lt;b&gt;", "a", "c"]
    assert fig.data[0].zmin == 0.0


def test_nothing_dropped_adds_no_dropped_labels():
    fig = figures.heatmap(np.tril(np.ones((3, 3))), list("xyz"), list("xyz"), title="t", dropped=np.zeros((3, 3), bool))
    assert [t.type for t in fig.data] == ["heatmap"]
    assert np.isfinite(np.asarray(fig.data[0].z, dtype=float)).all()


def test_medium_matrices_mark_dropped_cells_with_a_cross_and_large_ones_with_nothing():
    rng = np.random.default_rng(0)
    for size, marks in ((12, {"×"}), (60, set())):
        keep = rng.random((size, size)) > 0.5
        future = np.triu(np.ones((size, size), dtype=bool), 1)
        tokens = [f"t{k}" for k in range(size)]
        fig = figures.heatmap(np.where(keep, 1.0, 0.0), tokens, tokens, title="t", masked=future, dropped=~keep)
        crosses = [t for t in fig.data if t.type == "scatter" and t.mode == "markers" and t.marker.symbol == "x-thin"]
        assert ({"×"} if crosses else set()) == marks
        assert not any(t.mode == "text" for t in fig.data if t.type == "scatter"), "no words in small cells"
        assert not labelled(fig, "masked")


def test_the_token_window_moves_the_labels_with_the_cells():
    size = 20
    keep = np.ones((size, size), dtype=bool)
    keep[12, 11] = False
    tokens = [f"t{k}" for k in range(size)]
    style = figures.FigureStyle(token_window=(10, 14))
    fig = figures.heatmap(np.ones((size, size)), tokens, tokens, title="t", style=style, dropped=~keep)
    assert labelled(fig, "dropped") == {(12, 11)}
    assert list(fig.data[0].x) == [10, 11, 12, 13]


def test_a_draw_writes_its_words_in_its_cells_and_keeps_no_empty_legend_band_under_them():
    """In presenter mode six tokens' "masked" may not fit by the plain heatmap's reckoning, which then moves it to a
    legend; a dropout draw writes its words anyway, so a legend there had no entry, only 48 px of blank band."""
    future = np.triu(np.ones((6, 6), dtype=bool), 1)
    keep = ~np.eye(6, dtype=bool)
    for style in (figures.DEFAULT_STYLE, figures.PRESENTER, figures.PHONE):
        fig = figures.heatmap(
            np.tril(np.ones((6, 6))) * keep,
            list("abcdef"),
            list("abcdef"),
            title="t",
            masked=future,
            style=style,
            dropped=~keep,
        )
        assert not fig.layout.showlegend and fig.layout.margin.b == 10
        assert labelled(fig, "masked") == {tuple(cell) for cell in np.argwhere(future)}
