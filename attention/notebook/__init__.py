"""For the reader's notebook: ``check(module)`` says whether a chapter-3 class typed from the book is right.

``from attention.notebook import check`` then ``print(check(ca))``: the reader's
``CausalAttention`` (or v1, v2, the wrapper, ``MultiHeadAttention``) beside the
package's, stage by stage, on the book's inputs and random batches; the first
stage that differs, with its numbers, and the Break it page's mistake it is.
Needs only torch; ``import attention`` does not import this subpackage.

- ``reading``: which class the reader wrote, its sizes, and its forward traced with hooks;
- ``precision``: how far rounding lets two correct passes drift, stage by stage;
- ``matching``: the catalogue's mistakes run on the reader's weights;
- ``checking``: ``check`` and its result, ``Check``.
"""

from .checking import Check, check

__all__ = ["Check", "check"]
