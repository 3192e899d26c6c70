"""The book on every page, in Chromium: with the default settings, each matrix chapter 3 prints for its
six-token example is painted on its page and step, equal to ``attention.book_values()`` to 3 decimals, and
the step says these are the book's numbers.

The numbers are read back from plotly's own ``.data`` on each drawn ``.js-plotly-plot``. Cells drawn blank
(masked or dropped) must be the ones the book prints as 0 or −∞. (This file is not named ``test_book.py``:
``tests/test_book.py`` has that name, and pytest cannot collect two test modules of one name.)
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from apptest_support import THE_BOOKS, book_figures

pytestmark = pytest.mark.browser


def heatmaps_only(figures: dict[int, list[tuple]]) -> dict[int, list[tuple]]:
    """``book_figures()``' steps of one page, with only its whole matrices drawn as heatmaps (no bars, no rows)."""
    steps = {
        step: [(title, shown) for title, shown in expected if not isinstance(shown, tuple)]
        for step, expected in figures.items()
    }
    return {step: expected for step, expected in steps.items() if expected}


PAINTED = {page: heatmaps_only(figures) for page, figures in book_figures().items()}  # URL path -> {step: [...]}


def assert_painted(drawn: np.ndarray, book: np.ndarray, where: str) -> None:
    """``drawn`` shows ``book`` to 3 decimals; blank cells are where the book prints 0 or −∞."""
    assert drawn is not None and drawn.shape == book.shape, f"{where}: shape {None if drawn is None else drawn.shape}"
    blank = np.isnan(drawn)
    assert np.isin(book[blank], (0.0, -np.inf)).all(), f"{where}: a blank cell the book prints as a number"
    assert np.isfinite(book[~blank]).all(), f"{where}: a number where the book prints −∞"
    np.testing.assert_allclose(drawn[~blank], book[~blank], atol=5e-4, rtol=0, err_msg=where)


@pytest.mark.parametrize("url_path", PAINTED)
def test_each_printed_matrix_is_painted_with_the_default_settings(app_page, url_path):
    for step, expected in PAINTED[url_path].items():
        app_page.goto(url_path, f"step={step}")
        where = f"{url_path} step {step}"
        assert app_page.step()[0] == step, where
        plots = app_page.plots()
        for pattern, book in expected:
            matching = [plot for plot in plots if re.search(pattern, plot.title)]
            assert matching, f"{where}: no figure titled like {pattern!r} among {[p.title for p in plots]}"
            (heatmap, *_) = matching[0].heatmaps()
            assert_painted(heatmap["z"], book.numpy().astype(float), f"{where}: {matching[0].title}")
        assert THE_BOOKS in app_page.captions(), f"{where}: no caption says these are the book's numbers"
