"""``attention.notebook.check`` on classes written as a reader writes them from the book: right, and with one
mistake each (the Break it page's ten, and ten others a reader makes), two mistakes, a forward that raises and
modules that are no attention.

The reader's classes are typed from chapter 3 (``tests/book_listings.py``; the package's own are in
``attention/``); each mistaken class is a copy of the reader's ``CausalAttention`` or ``MultiHeadAttention``
with the one line marked ``# Mistake`` changed (the ten others: ``tests/notebook_mutants.py``).
"""

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import attention
from attention.notebook import check
from attention.notebook.checking import SEED, _runs
from attention.notebook.reading import read_forward, recognise, reference
from tests import book_listings as book
from tests import notebook_mutants as mutants

ROOT = Path(__file__).resolve().parents[1]


# The book's five classes, as a reader types them: ``tests/book_listings.py``, under the book's names.

SelfAttention_v1 = book.SelfAttentionV1
SelfAttention_v2 = book.SelfAttentionV2
CausalAttention = book.CausalAttention
MultiHeadAttentionWrapper = book.MultiHeadAttentionWrapper
MultiHeadAttention = book.MultiHeadAttention


# CausalAttention with one mistake each.


class CausalTril(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length), diagonal=1))  # Mistake


class CausalDiagonal0(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=0))  # Mistake


class CausalFillZero(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], 0)  # Mistake
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalNoScaling(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores, dim=-1)  # Mistake
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalDivideByDk(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)  # Mistake
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalMaskAfterSoftmax(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], 0)  # Mistake
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalSoftmaxWrongDim(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-2)  # Mistake
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalDropoutWithoutRescale(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        if self.training:  # Mistake: dropout by hand, without dividing by 1 - p
            attn_weights = attn_weights * torch.empty_like(attn_weights).bernoulli_(1 - self.dropout.p)
        context_vec = attn_weights @ values
        return context_vec


# MultiHeadAttention with one mistake each.


class MultiHeadTril(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length), diagonal=1))  # Mistake


class MultiHeadDiagonal0(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=0))  # Mistake


class MultiHeadFillZero(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, 0)  # Mistake

        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


class MultiHeadNoScaling(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores, dim=-1)  # Mistake
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


class MultiHeadDivideByDk(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1], dim=-1)  # Mistake
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


class MultiHeadMaskAfterSoftmax(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]

        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights.masked_fill_(mask_bool, 0)  # Mistake
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


class MultiHeadSoftmaxWrongDim(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-2)  # Mistake
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


class MultiHeadDropoutWithoutRescale(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        if self.training:  # Mistake: dropout by hand, without dividing by 1 - p
            attn_weights = attn_weights * torch.empty_like(attn_weights).bernoulli_(1 - self.dropout.p)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


class MultiHeadViewWithoutTranspose(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, self.num_heads, num_tokens, self.head_dim)  # Mistake: no transpose
        values = values.view(b, self.num_heads, num_tokens, self.head_dim)  # Mistake: no transpose
        queries = queries.view(b, self.num_heads, num_tokens, self.head_dim)  # Mistake: no transpose

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


class MultiHeadMergeWithoutTranspose(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)

        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        context_vec = attn_weights @ values  # Mistake
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)
        return context_vec


def build(cls, *args):
    """As the book builds a module: ``torch.manual_seed(123)`` first."""
    torch.manual_seed(123)
    return cls(*args)


CAUSAL = (3, 2, 6, 0.5)  # d_in, d_out, context_length, dropout: the book's sizes, with dropout on
MULTIHEAD = (3, 4, 6, 0.5, 2)  # two heads of head_dim 2: with the book's head_dim of 1, scaling changes nothing


@pytest.mark.parametrize(
    ("cls", "args"),
    [
        (SelfAttention_v1, (3, 2)),
        (SelfAttention_v2, (3, 2)),
        (SelfAttention_v2, (3, 2, True)),
        (CausalAttention, CAUSAL),
        (MultiHeadAttentionWrapper, (*CAUSAL, 2)),
        (MultiHeadAttention, MULTIHEAD),
        (MultiHeadAttention, (*MULTIHEAD, True)),
        (attention.SelfAttention_v1, (3, 2)),
        (attention.SelfAttention_v2, (3, 2)),
        (attention.CausalAttention, CAUSAL),
        (attention.MultiHeadAttentionWrapper, (*CAUSAL, 2)),
        (attention.MultiHeadAttention, MULTIHEAD),
    ],
)
def test_the_books_classes_as_typed_and_the_packages_own_agree(cls, args):
    result = check(build(cls, *args))

    assert result.agrees, str(result)
    assert result.stage is None and result.mistake is None
    assert str(result).startswith(f"{cls.__name__} agrees with attention.{result.kind} to float32 precision")
    assert "on the book's inputs and 3 random batches, in eval and train mode." in str(result)
    assert repr(result) == str(result)


# (class, sizes, mistake, first stage, entry counted from 1, input): the first entry in reading order that differs.
# Attention weights are (batch item, head, row, column), context vectors (batch item, row, column), the mask
# (head, row, column). Row 1 of the weights is 1 for 'Your' itself in the right code, which the scaling mistakes
# keep; they first show in row 2.
EVAL, TRAIN = "the book's inputs in eval mode", "the book's inputs in train mode"
MISTAKEN = [
    (CausalFillZero, CAUSAL, "fill_zero", "attn_weights", (1, 1, 1, 1), EVAL),
    (CausalTril, CAUSAL, "tril_mask", "mask", (1, 1, 1), None),
    (CausalDiagonal0, CAUSAL, "diagonal_0", "mask", (1, 1, 1), None),
    (CausalNoScaling, CAUSAL, "no_scaling", "attn_weights", (1, 1, 2, 1), EVAL),
    (CausalDivideByDk, CAUSAL, "divide_by_d_k", "attn_weights", (1, 1, 2, 1), EVAL),
    (CausalMaskAfterSoftmax, CAUSAL, "mask_after_softmax", "attn_weights", (1, 1, 1, 1), EVAL),
    (CausalSoftmaxWrongDim, CAUSAL, "softmax_wrong_dim", "attn_weights", (1, 1, 1, 1), EVAL),
    (CausalDropoutWithoutRescale, CAUSAL, "dropout_without_rescale", "context", (1, 1, 1), TRAIN),
    (MultiHeadFillZero, MULTIHEAD, "fill_zero", "attn_weights", (1, 1, 1, 1), EVAL),
    (MultiHeadTril, MULTIHEAD, "tril_mask", "mask", (1, 1, 1), None),
    (MultiHeadDiagonal0, MULTIHEAD, "diagonal_0", "mask", (1, 1, 1), None),
    (MultiHeadNoScaling, MULTIHEAD, "no_scaling", "attn_weights", (1, 1, 2, 1), EVAL),
    (MultiHeadDivideByDk, MULTIHEAD, "divide_by_d_k", "attn_weights", (1, 1, 2, 1), EVAL),
    (MultiHeadMaskAfterSoftmax, MULTIHEAD, "mask_after_softmax", "attn_weights", (1, 1, 1, 1), EVAL),
    (MultiHeadSoftmaxWrongDim, MULTIHEAD, "softmax_wrong_dim", "attn_weights", (1, 1, 1, 1), EVAL),
    (MultiHeadDropoutWithoutRescale, MULTIHEAD, "dropout_without_rescale", "context", (1, 1, 1), TRAIN),
    (MultiHeadViewWithoutTranspose, MULTIHEAD, "view_without_transpose", "attn_weights", (1, 1, 2, 1), EVAL),
    (MultiHeadMergeWithoutTranspose, MULTIHEAD, "merge_without_transpose", "context", (1, 1, 3), EVAL),
]  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "args", "name", "stage", "index", "run"), MISTAKEN, ids=[m[0].__name__ for m in MISTAKEN]
)
def test_each_mistake_is_named_with_its_stage_entry_numbers_and_fix(cls, args, name, stage, index, run):
    result = check(build(cls, *args))
    mistake = attention.MISTAKES[name]
    text = str(result)

    assert not result.agrees
    assert (result.mistake, result.stage, result.index, result.run) == (mistake, stage, index, run)
    assert f'This is the mistake "{mistake.title}"' in text
    assert result.fix.splitlines()[0] in text and f"/mistakes?mistake={name}" in text
    assert f"row {index[-2]}" in text and f"column {index[-1]}" in text
    if stage == "mask":
        assert "yours is 1 (hidden), the package's is 0 (seen)" in text
    else:  # the mistake moves its entry thousands of times further than rounding can
        assert abs(result.yours - result.expected) > 1000 * result.allowed
        assert f"yours is {result.yours:.6g}, the package's is {result.expected:.6g}" in text


def test_the_list_holds_all_ten_mistakes_for_multihead_and_the_eight_one_head_can_make():
    multihead = {name for cls, args, name, *_ in MISTAKEN if args == MULTIHEAD}
    causal = {name for cls, args, name, *_ in MISTAKEN if args == CAUSAL}

    assert multihead == set(attention.MISTAKES)
    assert causal == set(attention.MISTAKES) - {"view_without_transpose", "merge_without_transpose"}


def test_a_fill_zero_report_names_the_books_tokens():
    text = str(check(build(CausalFillZero, *CAUSAL)))

    assert text.startswith("CausalFillZero differs from attention.CausalAttention first at the attention weights")
    assert "batch item 1, row 1 (query 'Your'), column 1 (key 'Your'): yours is 0.199" in text
    assert "Fix:\n    attn_scores.masked_fill_(mask_bool, -torch.inf)" in text


def test_a_wrappers_mistaken_heads_are_named_with_the_head():
    wrapper = build(MultiHeadAttentionWrapper, *CAUSAL, 2)
    wrapper.heads = nn.ModuleList([build(CausalSoftmaxWrongDim, *CAUSAL) for _ in range(2)])  # the reader's heads

    result = check(wrapper)

    assert (result.mistake.name, result.stage, result.index) == ("softmax_wrong_dim", "attn_weights", (1, 1, 1, 1))
    assert "batch item 1, head 1, row 1 (query 'Your'), column 1 (key 'Your')" in str(result)


class MultiHeadTwoMistakes(MultiHeadAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], 0)  # Mistake 1
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        context_vec = (attn_weights @ values).contiguous().view(b, num_tokens, self.d_out)  # Mistake 2: no transpose
        return self.out_proj(context_vec)


class CausalTwoMistakesInOneLine(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], 0)  # Mistake 1
        attn_weights = torch.softmax(attn_scores, dim=-1)  # Mistake 2
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values


def test_two_mistakes_report_the_first_stage_and_name_a_mistake_only_if_it_alone_gives_the_numbers():
    first = check(build(MultiHeadTwoMistakes, *MULTIHEAD))
    both = check(build(CausalTwoMistakesInOneLine, *CAUSAL))

    assert (first.stage, first.mistake.name, first.index) == ("attn_weights", "fill_zero", (1, 1, 1, 1))
    assert (both.stage, both.mistake, both.index) == ("attn_weights", None, (1, 1, 1, 1))
    assert "none of the Break it page's mistakes on its own" in str(both)


class CausalUnsliced(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool(), -torch.inf)  # fits only context_length tokens
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        return attn_weights @ values


def test_a_forward_that_raises_is_the_finding():
    result = check(build(CausalUnsliced, *CAUSAL))

    assert not result.agrees and result.run == "random batch 2 (2 × 5 tokens) in eval mode"
    assert result.raised.startswith("RuntimeError: The size of tensor a (5) must match")
    assert str(result).startswith(
        "On random batch 2 (2 × 5 tokens) in eval mode, x of shape (2, 5, 3), CausalUnsliced's forward raised "
        "RuntimeError: The size of tensor a (5)"
    )


class Shifted(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        return self.linear(x)


def test_what_is_no_chapter_3_module_gets_a_clear_error():
    with pytest.raises(TypeError, match=r"one of chapter 3's attention modules.*Shifted has no W_query, W_key"):
        check(Shifted())
    with pytest.raises(TypeError, match=r"Got a Tensor, which is not an nn\.Module"):
        check(attention.BOOK_INPUTS)
    mixed = build(CausalAttention, *CAUSAL)
    mixed.W_key = nn.Parameter(torch.rand(3, 2))
    with pytest.raises(TypeError, match=r"must all be nn.Parameter .* or all nn.Linear"):
        check(mixed)
    no_dropout = build(CausalAttention, *CAUSAL)
    no_dropout.dropout = nn.Identity()
    with pytest.raises(TypeError, match=r"dropout must be nn.Dropout\(dropout\), as in the book; got Identity"):
        check(no_dropout)


def test_sizes_that_do_not_fit_together_get_a_clear_error():
    wider_keys = build(CausalAttention, *CAUSAL)
    wider_keys.W_key = nn.Linear(3, 4, bias=False)
    with pytest.raises(ValueError, match=r"W_query nn.Linear\(3, 2, bias=False\), W_key nn.Linear\(3, 4"):
        check(wider_keys)
    heads = build(MultiHeadAttention, *MULTIHEAD)
    heads.head_dim = 3
    with pytest.raises(ValueError, match="num_heads \\* head_dim must be d_out: num_heads=2, head_dim=3, d_out=4"):
        check(heads)
    unequal = build(MultiHeadAttentionWrapper, *CAUSAL, 2)
    unequal.heads[1] = build(CausalAttention, 3, 2, 5, 0.5)
    with pytest.raises(ValueError, match="Every head of the wrapper must have the same"):
        check(unequal)


def test_the_readers_module_and_random_state_are_as_before():
    mha = build(MultiHeadAttention, *MULTIHEAD).train()
    mha.dropout.eval()  # a mixed mode, which must come back too
    state = {name: tensor.clone() for name, tensor in mha.state_dict().items()}
    rng = torch.get_rng_state()

    check(mha)

    assert mha.training and not mha.dropout.training and mha.out_proj.training
    assert all(torch.equal(state[name], tensor) for name, tensor in mha.state_dict().items())
    assert torch.equal(torch.get_rng_state(), rng)
    assert not any(m._forward_hooks for m in mha.modules())


class CausalOtherOrder(CausalAttention):
    """The same numbers in another order: the scaling split between queries and keys, the scores as einsum."""

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        scale = keys_size = self.W_key.out_features**0.25
        queries = self.W_query(x) / scale
        keys = self.W_key(x)
        values = self.W_value(x)
        attn_scores = torch.einsum("btd,bsd->bts", queries, keys / keys_size)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores, dim=-1))
        return torch.einsum("bts,bsd->btd", attn_weights, values)


def test_another_order_of_the_same_sums_agrees_to_float32_precision():
    torch.manual_seed(5)
    ca = CausalOtherOrder(16, 64, 20, 0.1)

    package = attention.CausalAttention(16, 64, 20, 0.1).eval()
    package.load_state_dict(ca.state_dict())
    x = torch.randn(2, 8, 16)

    result = check(ca)

    assert not torch.equal(ca.eval()(x), package(x))  # rounding moved some entries
    assert result.agrees, str(result)
    assert "The book's inputs have d_in = 3; yours has d_in = 16, so only random batches ran." in str(result)


def test_notes_say_what_the_sizes_leave_unchecked():
    book = check(build(MultiHeadAttention, 3, 2, 4, 0.0, 2))  # head_dim 1, no dropout, 4 tokens

    assert book.agrees and "on the book's inputs and 2 random batches" in str(book)
    assert "context_length is 4, so only the book's first 4 tokens went in." in book.notes
    assert any(
        note.startswith("head_dim is 1, so dividing the scores by √head_dim changes nothing") for note in book.notes
    )
    assert any(note.startswith("Dropout p is 0, so train mode drops nothing") for note in book.notes)


def test_the_link_is_the_break_it_pages_url_path_and_query_parameter():
    app = ast.parse((ROOT / "explorer_app.py").read_text(encoding="utf-8"))
    pages = next(n.value for n in app.body if isinstance(n, ast.Assign) and n.targets[0].id == "PAGES")
    options = {script: opts for script, _, _, opts in ast.literal_eval(pages)}
    page = (ROOT / "pages" / "mistakes.py").read_text(encoding="utf-8")

    assert check(build(CausalTril, *CAUSAL)).link == f"/{options['pages/mistakes.py']['url_path']}?mistake=tril_mask"
    assert 'initial_param("mistake", "mistakes")' in page


def test_import_attention_does_not_import_the_notebook_subpackage():
    code = (
        "import sys, attention; print('attention.notebook' in sys.modules, 'torch' in sys.modules); "
        "attention.notebook; print('attention.notebook' in sys.modules, callable(attention.notebook.check))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)

    assert done.stdout.split() == ["False", "False", "True", "True"]


class PackageClassWithTheReadersForward(attention.CausalAttention):
    forward = CausalFillZero.forward  # the package's __init__, the reader's mistaken forward


def test_a_subclass_of_the_packages_class_is_read_through_its_own_forward():
    result = check(build(PackageClassWithTheReadersForward, *CAUSAL))

    assert (result.mistake.name, result.stage, result.index) == ("fill_zero", "attn_weights", (1, 1, 1, 1))


class CausalReturningWeightsToo(CausalAttention):
    def forward(self, x):
        return super().forward(x), self.mask


def test_a_forward_that_returns_no_tensor_is_the_finding():
    result = check(build(CausalReturningWeightsToo, *CAUSAL))

    assert not result.agrees and result.raised == "returned a tuple, not a tensor"
    assert str(result).startswith(
        "On the book's inputs in eval mode, x of shape (2, 6, 3), CausalReturningWeightsToo's"
    )


# How each mistake differs, in the chapter's words: for the Break it page's ten and for ten others.


@functools.cache
def checked(cls, args):
    """``check`` on a freshly built module, once per class and sizes: the tests below read the same result."""
    return check(build(cls, *args))


SAYS = {  # a Break it mistake -> what check says of it, beside its name
    "fill_zero": "give weight to the future: keys after the query",
    "tril_mask": "Your mask hides the past, the diagonal and the next token.",
    "diagonal_0": "Your mask hides the diagonal and the future, and leaves the past seen.",
    "no_scaling": "Your attn_scores were not divided before the softmax",
    "divide_by_d_k": "Your attn_scores were divided by d_k = keys.shape[-1]",
    "mask_after_softmax": "the rows were not renormalized",
    "softmax_wrong_dim": "the queries: each column (one key) sums to 1, not each row (one query)",
    "dropout_without_rescale": "without dividing by 1 - p",
    "view_without_transpose": "split with view alone, without transpose(1, 2)",
    "merge_without_transpose": "Row 1 of your context_vec holds numbers of tokens 1 and 2",
}


@pytest.mark.parametrize(("cls", "args", "name"), [m[:3] for m in MISTAKEN], ids=[m[0].__name__ for m in MISTAKEN])
def test_each_break_it_mistake_is_also_said_in_the_chapters_words(cls, args, name):
    text = str(checked(cls, args))

    assert SAYS[name] in text
    assert text.index(SAYS[name]) < text.index("This is the mistake")


MH = (3, 8, 6, 0.5, 4)  # four heads of head_dim 2: √d_k, d_k, d_in, num_heads, √d_out and d_out all differ
RANDOM_2 = "random batch 2 (2 × 5 tokens) in eval mode"

# (class, sizes, first stage, input, what check says): stage None where the forward raised on that input.
OTHERS = [
    (mutants.CausalSoftmaxOverBatch, CAUSAL, "attn_weights", EVAL,
     ["normalized over dimension 0, the batch dimension, not the keys", "dim=-1, so each row sums to 1"]),
    (mutants.CausalTrilWithoutDiagonal, CAUSAL, "mask", None,
     ["Your mask hides the past and the diagonal, and leaves the future seen.", "diagonal=1"]),
    (mutants.CausalTrilInForward, CAUSAL, "attn_weights", EVAL,
     ["Row 6 of your attn_weights is NaN, as a softmax gives where every key of a row is hidden",
      "give weight to the future",
      "give no weight to the past and the diagonal, which the book's mask leaves seen"]),
    (mutants.CausalDropoutBeforeSoftmax, (3, 2, 6, 0.0), "attn_weights", EVAL,
     ["not attention weights: row 6 sums to", "It is your attn_scores, masked, before the softmax.",
      "it belongs after it: attn_weights = self.dropout(attn_weights)", "Your output still agrees only because p = 0"]),
    (mutants.CausalDropoutBeforeSoftmax, CAUSAL, "attn_weights", EVAL, ["masked, before the softmax"]),
    (mutants.CausalDivideByDin, CAUSAL, "attn_weights", EVAL,
     ["divided by d_in = 3 before the softmax, not by √d_k = keys.shape[-1] ** 0.5 = 1.41"]),
    (mutants.CausalMaskRowsOnly, CAUSAL, None, RANDOM_2,
     ["Your line that raised: attn_scores.masked_fill_(self.mask.bool()[:num_tokens], -torch.inf)",
      "The mask does not fit attn_scores", "self.mask.bool()[:num_tokens, :num_tokens]"]),
    (mutants.CausalTransposedQuery, (3, 3, 6, 0.5), "attn_weights", EVAL,
     ["Your queries are x @ W_query.weight", "multiplies x by the transpose of W_query", "queries = self.W_query(x)"]),
    (mutants.CausalTransposedQuery, CAUSAL, None, EVAL,
     ["so x @ W_query.weight multiplies by its transpose: the book calls self.W_query(x)"]),
    (mutants.MultiHeadSoftmaxOverBatch, MH, "attn_weights", EVAL, ["dimension 0, the batch dimension"]),
    (mutants.MultiHeadTrilWithoutDiagonal, MH, "mask", None, ["hides the past and the diagonal"]),
    (mutants.MultiHeadDropoutBeforeSoftmax, (3, 8, 6, 0.0, 4), "attn_weights", EVAL,
     ["masked, before the softmax", "belongs after it"]),
    (mutants.MultiHeadDivideByDin, MH, "attn_weights", EVAL, ["divided by d_in = 3 before the softmax"]),
    (mutants.MultiHeadDivideByNumHeads, MH, "attn_weights", EVAL, ["divided by num_heads = 4 before the softmax"]),
    (mutants.MultiHeadDivideBySqrtDout, MH, "attn_weights", EVAL, ["divided by √d_out = 2.83 before the softmax"]),
    (mutants.MultiHeadWithoutContiguous, MH, None, EVAL,
     ["view size is not compatible", "call .contiguous() before .view(b, num_tokens, d_out)"]),
    (mutants.MultiHeadInterleavedHeads, MH, "context", EVAL,
     ["Column 2 of each token's context_vec holds head 2's number 1; the book's holds head 1's number 2.",
      "Your heads' numbers are interleaved"]),
    (mutants.MultiHeadHeadsReversed, MH, "context", EVAL,
     ["Your heads are concatenated in the wrong order (4, 3, 2, 1)"]),
    (mutants.MultiHeadTransposedQuery, (4, 4, 6, 0.5, 2), "attn_weights", "random batch 1 (2 × 6 tokens) in eval mode",
     ["Your queries are x @ W_query.weight", "transpose"]),
    (mutants.MultiHeadMaskRowsOnly, MH, None, RANDOM_2, ["The mask does not fit attn_scores"]),
]  # fmt: skip
OTHER_IDS = [f"{m[0].__name__}{m[1]}" for m in OTHERS]


@pytest.mark.parametrize(("cls", "args", "stage", "run", "says"), OTHERS, ids=OTHER_IDS)
def test_each_other_mistake_is_placed_and_said_in_the_chapters_words(cls, args, stage, run, says):
    result = checked(cls, args)
    text = str(result)

    assert not result.agrees and result.mistake is None
    assert (result.stage, result.run) == (stage, run)
    assert (result.raised is not None) == (stage is None)
    assert all(phrase in text for phrase in says), text


def test_the_ten_others_are_ten_kinds_of_mistake():
    kinds = {cls.__name__.removeprefix("Causal").removeprefix("MultiHead") for cls, *_ in OTHERS}
    kinds -= {"HeadsReversed", "TrilInForward"}  # the heads' order again; tril without diagonal=1 again

    assert len(kinds) == 10, kinds


def test_dropout_before_the_softmax_quotes_scores_as_scores():
    result = checked(mutants.CausalDropoutBeforeSoftmax, (3, 2, 6, 0.0))

    assert result.seen_as[:2] == ("book_scores", "attn_scores")
    assert "yours is 0.31108, the package's attn_scores there is 0.31108 and its attn_weights 1." in str(result)


def test_a_projection_built_the_other_way_round_is_named():
    swapped = build(CausalAttention, *CAUSAL)
    swapped.W_query = nn.Linear(2, 3, bias=False)

    with pytest.raises(ValueError, match=r"W_query is built the other way round, nn.Linear\(2, 3\): the book builds"):
        check(swapped)


ALL = [m[:2] for m in MISTAKEN] + [m[:2] for m in OTHERS]
ALL_IDS = [m[0].__name__ for m in MISTAKEN] + OTHER_IDS


@pytest.mark.parametrize(("cls", "args"), ALL, ids=ALL_IDS)
def test_every_sentence_is_under_35_words(cls, args):
    result = checked(cls, args)
    text = str(result).replace(result.raised or "\0", "PyTorch's message.")  # quoted, not check's own words
    sentences = [s for line in text.splitlines() for s in re.split(r"(?<=[.:])\s+(?=[A-Z])", line)]

    assert max(len(sentence.split()) for sentence in sentences) <= 35, max(sentences, key=lambda s: len(s.split()))


def _tensor(whose: str, name: str, module, run_name: str) -> torch.Tensor:
    """The tensor a quote names, computed again here: the reader's stage through hooks, the package's through trace."""
    sizes = recognise(module)
    parameter = next(module.parameters())
    runs, _ = _runs(sizes, parameter.device, parameter.dtype)
    run = next(run for run in runs if run.name == run_name)
    seed = SEED if run.training else None
    module.train(run.training)
    if whose == "yours":
        return read_forward(module, sizes, run.x, seed=seed)[name]
    steps = attention.trace(reference(module, sizes), run.x, training=run.training, seed=seed)
    return getattr(steps, name).to(torch.float64)


@pytest.mark.parametrize(("cls", "args"), ALL, ids=ALL_IDS)
def test_every_number_quoted_is_in_the_tensor_it_names(cls, args):
    result = checked(cls, args)
    text = str(result)
    module = build(cls, *args)

    for quote in result.quotes:
        tensor = _tensor(quote.whose, quote.tensor, module, quote.run)
        value = float(tensor[quote.index].sum()) if quote.row_sum else float(tensor[quote.index])
        assert f"{quote.value:.6g}" in text
        assert value == pytest.approx(quote.value, abs=1e-6), quote
    numbers = re.findall(r"(?:is|sums to) (-?\d+\.\d+|-?\d+(?=[ ,.]))", text)
    quoted = {f"{quote.value:.6g}" for quote in result.quotes}
    assert set(numbers) <= quoted | {"1", "0"}, (numbers, quoted)


class SelfAttentionV2SoftmaxDim0(SelfAttention_v2):
    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)  # Mistake: (num_tokens, num_tokens)
        context_vec = attn_weights @ values
        return context_vec


def test_without_self_dropout_the_weights_are_read_off_what_forward_returns():
    result = checked(SelfAttentionV2SoftmaxDim0, (3, 2))

    assert (result.stage, result.mistake.name) == ("context", "softmax_wrong_dim")
    assert "Your softmax normalized over dimension 0, the queries: each column (one key) sums to 1" in str(result)
