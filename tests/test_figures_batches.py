"""``figures.without_cell_text``: side-by-side heatmaps too narrow for printed values."""

import numpy as np

from attention import figures


def test_without_cell_text_drops_numbers_and_masked_labels_but_keeps_the_data():
    z = np.arange(9, dtype=float).reshape(3, 3)
    masked = np.triu(np.ones((3, 3), dtype=bool), 1)
    fig = figures.heatmap(z, ["a", "<b>", "a"], ["a", "<b>", "a"], title="t", masked=masked)
    assert fig.data[0].texttemplate and any(t.name == "masked" for t in fig.data)

    bare = figures.without_cell_text(fig)
    assert [t.type for t in bare.data] == ["heatmap", "scatter"] and bare.data[1].mode == "markers"  # hover stays
    assert bare.data[0].text is None and bare.data[0].texttemplate is None
    np.testing.assert_array_equal(np.asarray(bare.data[0].z), np.asarray(fig.data[0].z))
    assert list(bare.layout.yaxis.ticktext) == ["a", "&lt;b&gt;", "a"]
    assert fig.data[0].texttemplate, "the original figure is left unchanged"


def test_without_cell_text_leaves_a_figure_without_text_alone():
    fig = figures.heatmap(np.zeros((20, 20)), list("abcdefghijklmnopqrst"), list("abcdefghijklmnopqrst"), title="t")
    assert fig.data[0].text is None and fig.data[0].texttemplate is None
    assert figures.without_cell_text(fig) is fig  # nothing to remove, so no copy
