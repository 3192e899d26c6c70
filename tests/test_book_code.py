"""The code "Show the code" opens for each chapter class reads like the book's ``forward``.

Measured against ``tests/book_listings.py``: at most 1.5x the book's lines (plus one input
check), most of the book's tokens, and the same numbers as the book's class bit for bit.
"""

import collections
import inspect
import io
import textwrap
import tokenize

import pytest
import torch

import attention
from attention import BOOK_INPUTS, build
from tests import book_listings

CLASSES = {
    "SelfAttention_v1": (book_listings.SelfAttentionV1, (3, 2), 123, False),
    "SelfAttention_v2": (book_listings.SelfAttentionV2, (3, 2), 789, False),
    "CausalAttention": (book_listings.CausalAttention, (3, 2, 6, 0.0), 123, True),
    "MultiHeadAttentionWrapper": (book_listings.MultiHeadAttentionWrapper, (3, 2, 6, 0.0, 2), 123, True),
    "MultiHeadAttention": (book_listings.MultiHeadAttention, (3, 2, 6, 0.0, 2), 123, True),
}


def shown(name: str):
    """What "Show the code" opens for a class: its ``steps``, or its ``forward`` where that is the book's code."""
    cls = getattr(attention, name)
    return getattr(cls, "steps", cls.forward)


def code_lines(function) -> list[str]:
    """The lines of code, without blank lines, comments, the docstring or the input check."""
    source = textwrap.dedent(inspect.getsource(function))
    lines = []
    for line in source.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and not stripped.startswith("check_batch("):
            lines.append(stripped)
    return lines


def code_tokens(function) -> collections.Counter:
    """Names, operators and numbers of the code, comments and the input check left out."""
    source = "\n".join(code_lines(function))
    kinds = (tokenize.NAME, tokenize.OP, tokenize.NUMBER)
    words = [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline) if tok.type in kinds]
    return collections.Counter(words)


@pytest.mark.parametrize("name", CLASSES)
def test_shown_code_is_at_most_one_and_a_half_times_the_books_lines(name):
    book_cls = CLASSES[name][0]
    ours = code_lines(shown(name))
    book = code_lines(book_cls.forward)

    assert len(ours) <= 1.5 * len(book), (len(ours), len(book))


@pytest.mark.parametrize("name", CLASSES)
def test_shown_code_uses_most_of_the_books_tokens(name):
    book_cls = CLASSES[name][0]
    ours, book = code_tokens(shown(name)), code_tokens(book_cls.forward)
    shared = sum((ours & book).values()) / sum(book.values())

    assert shared >= 0.75, shared


@pytest.mark.parametrize("name", ["SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttention"])
def test_forward_is_steps_output(name):
    assert code_lines(getattr(attention, name).forward)[-1] == "return self.steps(x).output"


def test_the_wrappers_forward_is_the_books_one_line():
    ours = code_lines(attention.MultiHeadAttentionWrapper.forward)
    book = code_lines(book_listings.MultiHeadAttentionWrapper.forward)

    assert len(ours) == len(book) == 2
    assert ours[-1].split("  #")[0] == book[-1] == "return torch.cat([head(x) for head in self.heads], dim=-1)"


@pytest.mark.parametrize("name", CLASSES)
def test_same_numbers_as_the_books_class_bit_for_bit(name):
    book_cls, args, seed, batched = CLASSES[name]
    ours = build(getattr(attention, name), seed, *args)
    book = build(book_cls, seed, *args)
    x = torch.stack((BOOK_INPUTS, BOOK_INPUTS)) if batched else BOOK_INPUTS

    with torch.no_grad():
        assert torch.equal(ours(x), book(x))
