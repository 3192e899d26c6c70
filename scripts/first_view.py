"""Store the first page's numbers for the book's example: ``python scripts/first_view.py``.

Why attention opens on the book's six vectors and a GRU of 16 hidden units, seed 123. A new server draws
that page from ``explorer/data/why_attention_book.npz`` before it has imported torch
(``explorer.models``); this computes the numbers with the same torch code as every other view
and writes them. tests/test_first_view.py fails when the stored numbers and the code disagree.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, like scripts/train.py

from explorer.models import STORE, save
from explorer.settings import DEFAULTS
from explorer.views import WHY_HIDDEN_SIZE, Run, computed_why_view


def main() -> None:
    """Compute the book example's first view with torch and store it."""
    book = Run.of(DEFAULTS).ready().inputs
    save(computed_why_view(book, DEFAULTS.seed, WHY_HIDDEN_SIZE), book, DEFAULTS.seed, WHY_HIDDEN_SIZE)
    print(f"wrote {STORE} ({STORE.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
