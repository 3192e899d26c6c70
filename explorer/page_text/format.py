"""Numbers written as the book prints them."""

from __future__ import annotations

import numpy as np


def first_values(matrix, count: int = 4) -> str:
    """A matrix's first row as the book prints it: "[0.3190, 0.4858]", with "…" when there are more."""
    row = np.asarray(matrix)[0]
    return "[" + ", ".join(f"{v:.4f}" for v in row[:count]) + (", …]" if row.size > count else "]")
