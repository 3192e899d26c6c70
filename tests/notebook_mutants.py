"""Ten mistakes a reader makes typing chapter 3 that are not on the Break it page, each one line (or one line
repeated for queries, keys and values) of the book's ``CausalAttention`` or ``MultiHeadAttention``
(``tests/book_listings.py``) changed, marked ``# Mistake``. ``tests/test_notebook_check.py`` runs ``check`` on each.
"""

import torch

from tests.book_listings import CausalAttention, MultiHeadAttention

# CausalAttention with one mistake each.


class CausalSoftmaxOverBatch(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)  # Mistake
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalTrilWithoutDiagonal(CausalAttention):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))  # Mistake


class CausalTrilInForward(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        mask = torch.tril(torch.ones(num_tokens, num_tokens))  # Mistake: the buffer's triu, diagonal=1 retyped
        attn_scores.masked_fill_(mask.bool(), -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalDropoutBeforeSoftmax(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_scores = self.dropout(attn_scores)  # Mistake: before the softmax
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = attn_weights @ values
        return context_vec


class CausalDivideByDin(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / d_in, dim=-1)  # Mistake
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalMaskRowsOnly(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens], -torch.inf)  # Mistake: the columns not sliced
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


class CausalTransposedQuery(CausalAttention):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = x @ self.W_query.weight  # Mistake: nn.Linear's weight is (d_out, d_in)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec


# MultiHeadAttention with one mistake each: ``_forward`` is the book's forward with the lines a mistake changes
# (how the scores become weights, how the heads are merged) passed in, so each class below shows its one line.


class _MultiHead(MultiHeadAttention):
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

        attn_weights = self.weigh(attn_scores, keys)
        attn_weights = self.dropout(attn_weights)

        return self.out_proj(self.merge(attn_weights @ values, b, num_tokens))

    def weigh(self, attn_scores, keys):
        return torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)

    def merge(self, context_vec, b, num_tokens):
        return context_vec.transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)


class MultiHeadSoftmaxOverBatch(_MultiHead):
    def weigh(self, attn_scores, keys):
        return torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)  # Mistake


class MultiHeadTrilWithoutDiagonal(MultiHeadAttention):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.register_buffer("mask", torch.tril(torch.ones(context_length, context_length)))  # Mistake


class MultiHeadDivideByDin(_MultiHead):
    def weigh(self, attn_scores, keys):
        return torch.softmax(attn_scores / self.W_query.in_features, dim=-1)  # Mistake: d_in


class MultiHeadDivideByNumHeads(_MultiHead):
    def weigh(self, attn_scores, keys):
        return torch.softmax(attn_scores / self.num_heads, dim=-1)  # Mistake


class MultiHeadDivideBySqrtDout(_MultiHead):
    def weigh(self, attn_scores, keys):
        return torch.softmax(attn_scores / self.d_out**0.5, dim=-1)  # Mistake: d_out, not head_dim


class MultiHeadWithoutContiguous(_MultiHead):
    def merge(self, context_vec, b, num_tokens):
        return context_vec.transpose(1, 2).view(b, num_tokens, self.d_out)  # Mistake: no contiguous()


class MultiHeadInterleavedHeads(_MultiHead):
    def merge(self, context_vec, b, num_tokens):
        return context_vec.permute(0, 2, 3, 1).contiguous().view(b, num_tokens, self.d_out)  # Mistake


class MultiHeadHeadsReversed(_MultiHead):
    def merge(self, context_vec, b, num_tokens):
        return context_vec.flip(1).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)  # Mistake


class MultiHeadDropoutBeforeSoftmax(_MultiHead):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries, keys, values = (
            getattr(self, name)(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
            for name in ("W_query", "W_key", "W_value")
        )
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_scores = self.dropout(attn_scores)  # Mistake: before the softmax
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return self.out_proj(self.merge(attn_weights @ values, b, num_tokens))


class MultiHeadTransposedQuery(_MultiHead):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries = x @ self.W_query.weight  # Mistake: nn.Linear's weight is (d_out, d_in)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        return self.out_proj(self.merge(attn_weights @ values, b, num_tokens))


class MultiHeadMaskRowsOnly(_MultiHead):
    def forward(self, x):
        b, num_tokens, d_in = x.shape
        queries, keys, values = (
            getattr(self, name)(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
            for name in ("W_query", "W_key", "W_value")
        )
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens], -torch.inf)  # Mistake: the columns not sliced
        attn_weights = self.dropout(torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1))
        return self.out_proj(self.merge(attn_weights @ values, b, num_tokens))
