"""The glossary: every term a learner meets on the pages, defined in one to three sentences in chapter 3's
own notation, and ``term`` to link a term where it first appears on a page.

Pure text, written in ``TERMS_TEXT``: the Glossary page (``pages/glossary.py``) draws ``TERMS`` in order, one
heading per term whose anchor is the term's key, so ``/glossary#d_k`` names one entry. ``NOTATION`` is the
convention every page follows; docs/book.md's "Notation" section says the same.
"""

from __future__ import annotations

from dataclasses import dataclass

URL_PATH = "glossary"  # the Glossary page's url_path in explorer_app.PAGES


@dataclass(frozen=True)
class Term:
    """One entry: the ``name`` shown (``code``: a Python name, shown as code) and its ``definition`` (Markdown)."""

    name: str
    definition: str
    code: bool = False

    def shown(self) -> str:
        """The name as the glossary and links show it."""
        return f"`{self.name}`" if self.code else self.name


NOTATION = (
    "**Notation.** The app follows the book. Tokens are counted from 1: the first token's embedding is "
    "x^(1), which Python stores in `inputs[0]`, so x^(i) is `inputs[i - 1]`.",
    "A name with a number is the book's name for that token: `query_2`, `attn_scores_2`, `attn_weights_2` and "
    "`context_vec_2` belong to x^(2), the second token, which is row `[1]` of the full matrices.",
    "Heads and layers are counted from 1 in words (head 1 is the first); code indexes them from 0, and a page "
    "says so where it shows an index.",
    "**Attention weights** are the softmax's output, computed anew for every input. The **weight matrices** W_query, "
    "W_key and W_value are the trainable parameters. Where “weights” alone could mean either, the app names which.",
    "d_out is a module's output size. Where it could mean one head's size or all heads' together, the page "
    "says which; head_dim is one head's size in `MultiHeadAttention`.",
)

TERMS_TEXT = """
## token: token
A piece of text the tokenizer makes: a word, part of a word, a space with a word, or a punctuation mark. GPT-2's
byte-pair encoding (BPE, chapter 2) splits text into tokens and gives each an integer **token id** from its vocabulary
of 50,257.
## embedding: embedding
The vector of d_in numbers that stands for one token. Chapter 3 starts from six hand-picked 3-d embeddings, x^(1) to
x^(6), for “Your journey starts with one step”. In a GPT they are learned.
## d_in: `d_in`
The size of each input embedding: the number of columns of `inputs`. The book's example has d_in = 3; GPT-2 small has
768.
## d_out: `d_out`
The size of the vectors a module outputs. In `SelfAttention_v1`, `SelfAttention_v2` and `CausalAttention` it is the size
of each query, key, value and context vector. In `MultiHeadAttention` it is all heads together, num_heads × head_dim;
GPT models usually take d_out = d_in.
## d_k: `d_k`
The size of each key vector, `keys.shape[-1]`; the scores are divided by √d_k before the softmax. It is d_out in the
single-head classes and head_dim in `MultiHeadAttention`.
## head_dim: `head_dim`
One head's size in `MultiHeadAttention`: `d_out // num_heads`. Each head's queries, keys, values and context vectors
have head_dim entries; GPT-2 small has 768 / 12 = 64.
## num_heads: `num_heads`
How many attention heads run side by side. Each head has its own projections (in `MultiHeadAttention`, its own head_dim
columns of W_query, W_key and W_value), so it can attend to different relations between the tokens. GPT-2 small has 12
heads in each of its 12 layers.
## context_length: `context_length`
The most tokens the module accepts: its causal mask is built once at context_length × context_length and sliced to each
input's length. GPT-2 supports 1,024 tokens.
## self_attention: self-attention
Attention within one sequence: each token's query is compared with every token of the same input. Its output is one
context vector per token.
## query_key_value: query, key, value
The three vectors each token gets from its embedding: x @ W_query, x @ W_key and x @ W_value. A query is compared with
every key to score it; the attention weights then mix the values. The names come from information retrieval, as in a
database search: a query is matched against keys, and the matching items' values are returned.
## weight_matrices: weight matrices (trainable weights)
W_query, W_key and W_value (and `out_proj` with several heads): the module's parameters. They start random and training
adjusts them. Not the same as **attention weights**, which are computed anew for every input.
## attention_scores: attention scores
The dot product of a query with each key, before the softmax: `attn_scores_2` holds the query x^(2)'s scores. They can
be any real number; their row need not sum to 1.
## attention_weights: attention weights
The attention scores after the softmax: each is 0 or more and each row sums to 1. `attn_weights_2[j]` (Python's j) is
how much x^(j+1) counts in x^(2)'s context vector. Computed for each input, never trained.
## context_vector: context vector
One token's output: the values (the inputs, in simplified attention) weighted by its attention weights and added up. It
is an enriched embedding that carries what the token attends to; `context_vec_2` is x^(2)'s.
## dot_product: dot product
Multiply two vectors entry by entry and add: x·y = Σ x_k y_k. It equals |x|·|y|·cos(angle), so it is large when the
vectors point the same way.
## softmax: softmax
Turns a row of numbers into positive numbers that sum to 1, exp(x_i) / Σ_j exp(x_j): a probability distribution. A
larger input always gets a larger output, so the order of the scores is kept.
## scaled_dot_product: scaled dot-product attention
Attention whose scores are divided by √d_k before the softmax, named by Vaswani et al. (2017), “Attention Is All You
Need”. If query and key entries have mean 0 and variance 1, a dot product over d_k entries has variance d_k. Dividing
by √d_k brings it back to 1, which keeps the softmax from saturating when d_k is large.
## saturates: saturates
A softmax saturates when one score is far above the rest: its weight is nearly 1, the others nearly 0. The row is almost
one-hot, and small changes of the scores barely change it.
## one_hot: one-hot
A vector with a single 1 and every other entry 0.
## entropy: entropy (nats)
How spread out a row of attention weights is: −Σ w log w. With the natural log its unit is the nat: 0 when one weight is
1, log n when n weights are equal.
## gradient: gradient
How much a result changes per small change of an input; ∂y/∂x_j is y's gradient with respect to x_j. Training moves each
parameter against its gradient; PyTorch's autograd computes them.
## causal_mask: causal mask
Hides, for each query, the tokens after it: the entries above the diagonal. Their scores become −∞ before the softmax,
so their attention weights are exactly 0. Attention with this mask is causal attention, also called masked attention.
## buffer: buffer (register_buffer)
A tensor a module registers with `register_buffer`, like `CausalAttention`'s `mask`. It moves with the module under
`.to(device)` and is saved in its `state_dict`, but it is no parameter: training never changes it.
## dropout: dropout
In training mode, zeroes each value with probability p and multiplies the rest by 1 / (1 − p). Chapter 3 applies it to
the attention weights to reduce overfitting; in eval mode it does nothing. GPT models are usually trained with
p = 0.1 or 0.2; the book's demos use p = 0.5 so that the effect is easy to see.
## training_mode: training mode, eval mode
`module.train()` turns dropout on, `module.eval()` turns it off. The book prints its outputs with dropout off, except
section 3.5.2's dropout example.
## batch: batch
Several inputs stacked into one tensor of shape (b, num_tokens, d_in), so one call processes them all. The book stacks
its six embeddings twice: a batch of 2.
## transpose: `transpose(1, 2)`
Swaps two dimensions of a tensor; `.T` would reverse them all. `CausalAttention` writes `keys.transpose(1, 2)` to swap
tokens and vector size in a 3-d batch. `MultiHeadAttention` uses `transpose(1, 2)` to swap tokens and heads, and
`keys.transpose(2, 3)` for the scores.
## contiguous: `contiguous()`
Copies a tensor so its entries lie in memory in row order. `transpose` only changes how memory is read, and `.view`
needs the order, so `MultiHeadAttention` calls `.contiguous()` before merging heads.
## nn_linear: `nn.Linear`
A PyTorch layer computing x @ weight.T (+ bias). `SelfAttention_v2` uses it instead of `nn.Parameter(torch.rand(...))`
for its better-scaled initialization, which makes training more stable.
## qkv_bias: `qkv_bias`
Whether the query, key and value `nn.Linear` layers add a bias vector. The book sets it to False.
## out_proj: `out_proj`
`MultiHeadAttention`'s last layer, `nn.Linear(d_out, d_out)`, applied to the concatenated heads. The book notes it is
not strictly needed but common in LLMs.
## broadcast: broadcast
PyTorch's rule for combining tensors of different shapes: a dimension of size 1, or a missing leading one, is repeated
to match, without copying memory.
## materialize: materialize
To store a tensor whole in memory, for example all num_tokens × num_tokens attention weights at once.
## fused_kernel: fused kernel
One routine that does several steps (scores, mask, softmax, weighted sum) in one pass, often without materializing the
attention weights. PyTorch's `scaled_dot_product_attention` picks one by backend.
## log_log: log–log axes
A chart whose two axes are both logarithmic, so equal distances mean equal ratios. A power law, such as time growing
like num_tokens², is a straight line on them.
## encoder_decoder: encoder–decoder (RNN)
The translation model before transformers. A recurrent network (RNN), the encoder, reads the input one token at a time;
a second one, the decoder, writes the output from the encoder's hidden state.
## hidden_state: hidden state
An RNN's memory: a vector it updates after reading each token. A plain decoder starts from the encoder's last hidden
state only.
## gates: gates
In a GRU, vectors of numbers between 0 and 1, made by a sigmoid. Entry by entry, they decide how much of the old hidden
state to keep and how much of the new input to let in.
## bahdanau: Bahdanau attention
Bahdanau, Cho and Bengio (2014): at each output step the decoder scores every encoder state with a small network, takes
the softmax, and reads their weighted sum. It inspired the attention of chapter 3.
## layernorm: LayerNorm
Layer normalization (chapter 4): it shifts and scales each token's vector to mean 0 and variance 1, then applies a
learned scale and shift. A GPT block applies it before attention.
## attention_sink: attention sink
A token, often the first, that gets a large share of a head's attention weights from most queries. A common explanation,
not a proven one: a softmax row must sum to 1, so a head with nothing useful to attend to puts its weight there.
"""


def _terms(text: str) -> dict[str, Term]:
    """``text``'s entries: a "## key: name" line (a name in backticks is code), then the definition's lines."""
    terms = {}
    for entry in text.strip().removeprefix("## ").split("\n## "):
        head, *lines = entry.splitlines()
        key, _, name = head.partition(": ")
        terms[key] = Term(name.strip("`"), " ".join(lines), code=name.startswith("`"))
    return terms


TERMS = _terms(TERMS_TEXT)


def term(key: str, text: str | None = None) -> str:
    """A Markdown link to ``key``'s entry on the Glossary page, showing ``text`` (default: the term's name), where
    the term first appears on a page: ``f"the {term('attention_weights', 'weights')} …"``. An unknown key raises
    ``KeyError``, so a typo fails a test instead of making a dead link. Streamlit opens it in a new tab, so the
    learner's tab keeps its page, step and settings."""
    if key not in TERMS:  # fail here, not as a dead link
        raise KeyError(f"{key!r} is not a glossary term; the terms are {', '.join(TERMS)}.")
    return f"[{text or TERMS[key].shown()}](/{URL_PATH}#{key})"
