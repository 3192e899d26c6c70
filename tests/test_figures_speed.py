"""The Speed page's figure builder: measurements on log–log axes, ticked at the measured sizes."""

import numpy as np

from attention import figures


def test_measured_lines_draw_each_series_on_log_log_axes_ticked_at_every_size():
    sizes = [16, 64, 256]
    series = {"quadratic": [1.0, 16.0, 256.0], "linear": [1.0, 4.0, 16.0], "a <b>tag</b>": [2.0, 2.0, 2.0]}
    fig = figures.lines(sizes, series, title="t", x_title="T", y_title="ms", measured=True, dashed=["linear"])

    assert [trace.name for trace in fig.data] == ["quadratic", "linear", "a &lt;b&gt;tag&lt;/b&gt;"]
    for trace, values in zip(fig.data, series.values(), strict=True):
        assert list(trace.x) == sizes
        np.testing.assert_array_equal(trace.y, values)
    assert [trace.line.dash for trace in fig.data] == ["solid", "dash", "solid"]
    assert fig.data[1].line.color == "#666666"  # the computed reference, grey
    assert len({trace.line.color for trace in fig.data}) == 3
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == sizes
    assert list(fig.layout.xaxis.ticktext) == ["16", "64", "256"]
    assert fig.layout.yaxis.dtick == 1


def test_slopes_on_log_log_axes_are_the_growth_exponents():
    """What the page's reading relies on: T² is twice as steep as T on these axes."""
    sizes = np.array([16.0, 64.0, 256.0])
    fig = figures.lines(sizes, {"T²": sizes**2, "T": sizes}, title="t", x_title="T", measured=True, y_title="MiB")
    slopes = [np.polyfit(np.log10(t.x), np.log10(t.y), 1)[0] for t in fig.data]

    np.testing.assert_allclose(slopes, [2.0, 1.0])
