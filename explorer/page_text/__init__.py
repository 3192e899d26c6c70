"""The words of the pages whose text is long, one module per page (a page with short text writes its words in
its steps), with the questions that every page shares (the glossary, shared with the notebook, is
``attention.prose.glossary``). Nothing here draws; the pages call these functions and render what they return."""

from __future__ import annotations

import numpy as np


def first_values(matrix, count: int = 4) -> str:
    """A matrix's first row as the book prints it: "[0.3190, 0.4858]", with "…" when there are more."""
    row = np.asarray(matrix)[0]
    return "[" + ", ".join(f"{v:.4f}" for v in row[:count]) + (", …]" if row.size > count else "]")
