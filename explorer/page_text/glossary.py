"""The glossary: every term a learner meets on the pages, defined in one to three sentences in chapter 3's
own notation, and ``term`` to link a term where it first appears on a page.

Pure text: the Glossary page (``pages/glossary.py``) draws ``TERMS`` in order, one heading per term whose
anchor is the term's key, so ``/glossary#d_k`` names one entry. ``NOTATION`` is the convention every page
follows; the README's "Notation" section says the same.
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
    "**Attention weights** are the softmax's output, computed anew for every input. The **weight matrices** "
    "W_query, W_key and W_value are the trainable parameters. Where “weights” alone could mean either, the "
    "app names which.",
    "d_out is a module's output size. Where it could mean one head's size or all heads' together, the page "
    "says which; head_dim is one head's size in `MultiHeadAttention`.",
)

TERMS: dict[str, Term] = {
    "token": Term(
        "token",
        "A piece of text the tokenizer makes: a word, part of a word, a space with a word, or a punctuation "
        "mark. GPT-2's byte-pair encoding (BPE, chapter 2) splits text into tokens and gives each an integer "
        "**token id** from its vocabulary of 50,257.",
    ),
    "embedding": Term(
        "embedding",
        "The vector of d_in numbers that stands for one token. Chapter 3 starts from six hand-picked 3-d "
        "embeddings, x^(1) to x^(6), for “Your journey starts with one step”. In a GPT they are learned.",
    ),
    "d_in": Term(
        "d_in",
        "The size of each input embedding: the number of columns of `inputs`. The book's example has d_in = 3; "
        "GPT-2 small has 768.",
        code=True,
    ),
    "d_out": Term(
        "d_out",
        "The size of the vectors a module outputs. In `SelfAttention_v1`, `SelfAttention_v2` and "
        "`CausalAttention` it is the size of each query, key, value and context vector. "
        "In `MultiHeadAttention` it is all heads together, num_heads × head_dim; GPT models usually take "
        "d_out = d_in.",
        code=True,
    ),
    "d_k": Term(
        "d_k",
        "The size of each key vector, `keys.shape[-1]`; the scores are divided by √d_k before the softmax. "
        "It is d_out in the single-head classes and head_dim in `MultiHeadAttention`.",
        code=True,
    ),
    "head_dim": Term(
        "head_dim",
        "One head's size in `MultiHeadAttention`: `d_out // num_heads`. Each head's queries, keys, values and "
        "context vectors have head_dim entries; GPT-2 small has 768 / 12 = 64.",
        code=True,
    ),
    "num_heads": Term(
        "num_heads",
        "How many attention heads run side by side. Each head has its own projections (in `MultiHeadAttention`, "
        "its own head_dim columns of W_query, W_key and W_value), so it can attend to different relations between "
        "the tokens. GPT-2 small has 12 heads in each of its 12 layers.",
        code=True,
    ),
    "context_length": Term(
        "context_length",
        "The most tokens the module accepts: its causal mask is built once at context_length × context_length "
        "and sliced to each input's length. GPT-2 supports 1,024 tokens.",
        code=True,
    ),
    "self_attention": Term(
        "self-attention",
        "Attention within one sequence: each token's query is compared with every token of the same input. "
        "Its output is one context vector per token.",
    ),
    "query_key_value": Term(
        "query, key, value",
        "The three vectors each token gets from its embedding: x @ W_query, x @ W_key and x @ W_value. "
        "A query is compared with every key to score it; the attention weights then mix the values.",
    ),
    "weight_matrices": Term(
        "weight matrices (trainable weights)",
        "W_query, W_key and W_value (and `out_proj` with several heads): the module's parameters. They start "
        "random and training adjusts them. Not the same as **attention weights**, which are computed anew for "
        "every input.",
    ),
    "attention_scores": Term(
        "attention scores",
        "The dot product of a query with each key, before the softmax: `attn_scores_2` holds the query x^(2)'s "
        "scores. They can be any real number; their row need not sum to 1.",
    ),
    "attention_weights": Term(
        "attention weights",
        "The attention scores after the softmax: each is 0 or more and each row sums to 1. `attn_weights_2[j]` "
        "(Python's j) is how much x^(j+1) counts in x^(2)'s context vector. Computed for each input, never trained.",
    ),
    "context_vector": Term(
        "context vector",
        "One token's output: the values (the inputs, in simplified attention) weighted by its attention weights "
        "and added up. "
        "It is an enriched embedding that carries what the token attends to; `context_vec_2` is x^(2)'s.",
    ),
    "dot_product": Term(
        "dot product",
        "Multiply two vectors entry by entry and add: x·y = Σ x_k y_k. It equals |x|·|y|·cos(angle), so it is "
        "large when the vectors point the same way.",
    ),
    "softmax": Term(
        "softmax",
        "Turns a row of numbers into positive numbers that sum to 1, exp(x_i) / Σ_j exp(x_j): a probability "
        "distribution. A larger input always gets a larger output, so the order of the scores is kept.",
    ),
    "scaled_dot_product": Term(
        "scaled dot-product attention",
        "Attention whose scores are divided by √d_k before the softmax, named by Vaswani et al. (2017), "
        "“Attention Is All You Need”. The scaling keeps the softmax from saturating when d_k is large.",
    ),
    "saturates": Term(
        "saturates",
        "A softmax saturates when one score is far above the rest: its weight is nearly 1, the others nearly 0. "
        "The row is almost one-hot, and small changes of the scores barely change it.",
    ),
    "one_hot": Term("one-hot", "A vector with a single 1 and every other entry 0."),
    "entropy": Term(
        "entropy (nats)",
        "How spread out a row of attention weights is: −Σ w log w. With the natural log its unit is the nat: "
        "0 when one weight is 1, log n when n weights are equal.",
    ),
    "gradient": Term(
        "gradient",
        "How much a result changes per small change of an input; ∂y/∂x_j is y's gradient with respect to x_j. "
        "Training moves each parameter against its gradient; PyTorch's autograd computes them.",
    ),
    "causal_mask": Term(
        "causal mask",
        "Hides, for each query, the tokens after it: the entries above the diagonal. Their scores become −∞ "
        "before the softmax, so their attention weights are exactly 0. Attention with this mask is causal attention, "
        "also called masked attention.",
    ),
    "buffer": Term(
        "buffer (register_buffer)",
        "A tensor a module registers with `register_buffer`, like `CausalAttention`'s `mask`. It moves with "
        "the module under `.to(device)` and is saved in its `state_dict`, but it is no parameter: training "
        "never changes it.",
    ),
    "dropout": Term(
        "dropout",
        "In training mode, zeroes each value with probability p and multiplies the rest by 1 / (1 − p). Chapter 3 "
        "applies it to the attention weights to reduce overfitting; in eval mode it does nothing.",
    ),
    "training_mode": Term(
        "training mode, eval mode",
        "`module.train()` turns dropout on, `module.eval()` turns it off. The book prints its outputs with dropout "
        "off, except section 3.5.2's dropout example.",
    ),
    "batch": Term(
        "batch",
        "Several inputs stacked into one tensor of shape (b, num_tokens, d_in), so one call processes them all. "
        "The book stacks its six embeddings twice: a batch of 2.",
    ),
    "transpose": Term(
        "transpose(1, 2)",
        "Swaps two dimensions of a tensor; `.T` would reverse them all. `CausalAttention` writes "
        "`keys.transpose(1, 2)` to swap tokens and vector size in a 3-d batch. `MultiHeadAttention` uses "
        "`transpose(1, 2)` to swap tokens and heads, and `keys.transpose(2, 3)` for the scores.",
        code=True,
    ),
    "contiguous": Term(
        "contiguous()",
        "Copies a tensor so its entries lie in memory in row order. `transpose` only changes how memory is read, "
        "and `.view` needs the order, so `MultiHeadAttention` calls `.contiguous()` before merging heads.",
        code=True,
    ),
    "nn_linear": Term(
        "nn.Linear",
        "A PyTorch layer computing x @ weight.T (+ bias). `SelfAttention_v2` uses it instead of "
        "`nn.Parameter(torch.rand(...))` for its better-scaled initialization, which makes training more stable.",
        code=True,
    ),
    "qkv_bias": Term(
        "qkv_bias",
        "Whether the query, key and value `nn.Linear` layers add a bias vector. The book sets it to False.",
        code=True,
    ),
    "out_proj": Term(
        "out_proj",
        "`MultiHeadAttention`'s last layer, `nn.Linear(d_out, d_out)`, applied to the concatenated heads. "
        "The book notes it is not strictly needed but common in LLMs.",
        code=True,
    ),
    "broadcast": Term(
        "broadcast",
        "PyTorch's rule for combining tensors of different shapes: a dimension of size 1, or a missing leading "
        "one, is repeated to match, without copying memory.",
    ),
    "materialize": Term(
        "materialize",
        "To store a tensor whole in memory, for example all num_tokens × num_tokens attention weights at once.",
    ),
    "fused_kernel": Term(
        "fused kernel",
        "One routine that does several steps (scores, mask, softmax, weighted sum) in one pass, often without "
        "materializing the attention weights. PyTorch's `scaled_dot_product_attention` picks one by backend.",
    ),
    "log_log": Term(
        "log–log axes",
        "A chart whose two axes are both logarithmic, so equal distances mean equal ratios. A power law, such as "
        "time growing like num_tokens², is a straight line on them.",
    ),
    "encoder_decoder": Term(
        "encoder–decoder (RNN)",
        "The translation model before transformers. A recurrent network (RNN), the encoder, reads the input one "
        "token at a time; a second one, the decoder, writes the output from the encoder's hidden state.",
    ),
    "hidden_state": Term(
        "hidden state",
        "An RNN's memory: a vector it updates after reading each token. A plain decoder starts from the "
        "encoder's last hidden state only.",
    ),
    "gates": Term(
        "gates",
        "In a GRU, vectors of numbers between 0 and 1, made by a sigmoid. Entry by entry, they decide how much of "
        "the old hidden state to keep and how much of the new input to let in.",
    ),
    "bahdanau": Term(
        "Bahdanau attention",
        "Bahdanau, Cho and Bengio (2014): at each output step the decoder scores every encoder state with a small "
        "network, takes the softmax, and reads their weighted sum. It inspired the attention of chapter 3.",
    ),
    "layernorm": Term(
        "LayerNorm",
        "Layer normalization (chapter 4): it shifts and scales each token's vector to mean 0 and variance 1, "
        "then applies a learned scale and shift. A GPT block applies it before attention.",
    ),
    "attention_sink": Term(
        "attention sink",
        "A token, often the first, that a head gives much weight to when it finds nothing useful. A softmax row "
        "must sum to 1, so the weight has to go somewhere.",
    ),
}


def anchor(key: str) -> str:
    """The id of ``key``'s heading on the Glossary page (the key itself); raises ``KeyError`` for an unknown term."""
    if key not in TERMS:  # fail here, not as a dead link
        raise KeyError(f"{key!r} is not a glossary term; the terms are {', '.join(TERMS)}.")
    return key


def term(key: str, text: str | None = None) -> str:
    """A Markdown link to ``key``'s entry on the Glossary page, for a page's text where the term first appears.

    ``key`` is one of ``TERMS`` (``"d_k"``, ``"attention_weights"``, …); an unknown key raises ``KeyError``,
    so a typo fails a test instead of making a dead link. ``text`` is what the link shows, as Markdown
    (default: the term's name, in backticks for a code name). Write the text the sentence needs::

        f"Divide by √{term('d_k')} …"                   → "Divide by √[`d_k`](/glossary#d_k) …"
        f"the {term('attention_weights', 'weights')} …" → "the [weights](/glossary#attention_weights) …"

    Streamlit opens a Markdown link in a new browser tab, so the learner's tab keeps its page, step and
    settings; the Glossary tab scrolls to the entry. Link each term once per page, where it first appears.
    """
    target = anchor(key)
    return f"[{text or TERMS[key].shown()}](/{URL_PATH}#{target})"
