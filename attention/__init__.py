"""Chapter 3 of *Build a Large Language Model (From Scratch)*, stage by stage, as tested torch code.

Read the chapter's modules in this order; each adds a few lines to the one before:

1. ``tokens``: GPT-2 token ids with tiktoken, offline-friendly.
2. ``embeddings``: the book's six 3-d vectors, or seeded vectors for any text.
3. ``simplified``: scores, softmax weights and context vectors, no weights.
4. ``trainable``: ``W_query``/``W_key``/``W_value`` and 1/sqrt(d_k) scaling.
5. ``causal``: hiding future tokens, two ways, and ``CausalAttention``.
6. ``dropout``: dropping attention weights while training.
7. ``multihead``: the wrapper of heads and the efficient ``MultiHeadAttention``.
8. ``tracing``: ``trace``, every intermediate of a forward pass, named in the book's words.

Before the chapter, the subpackage ``before_chapter``: ``bahdanau`` (the RNN encoder–decoder bottleneck and
Bahdanau's additive attention) and ``reversal``, which trains that kind of encoder–decoder to reverse
sentences (``trained_alignment``, ``bottleneck_curve``).

After the chapter, the subpackage ``after_chapter``: ``gpt`` is chapter 4's ``GPTModel`` built on
``MultiHeadAttention``; ``inspecting`` reads its attention layer by layer (``layer_input``,
``every_layer_weights``, ``head_summaries``); ``training`` trains a small one on "The Verdict" and
saves and loads it (``load_trained_gpt``); ``gpt2`` loads a GPT-2 checkpoint the server's operator
names (``gpt2_from_environment``), never running pickled code; ``kv_cache`` (a ``MultiHeadAttention``
that takes and returns a cache of keys and values, and a sliding-window mask), ``gqa`` (grouped-query
attention; one group is multi-query attention) and ``generation`` (a GPT writing token by token, with
or without the cache).

Measuring, the subpackage ``measuring``: ``fast`` (the same ``MultiHeadAttention`` through PyTorch's
fused kernel, when no weights are needed), ``speed`` (time and peak memory of each implementation
against the sequence length T), ``costs`` (a KV cache's bytes and the multiply-adds per new
token, from a configuration) and ``generation_speed`` (the time per new token measured both ways).

``derivations`` writes any cell of those matrices out term by term (a score as its dot product,
a weight as its row's exps, a merged column as its head's weighted sum, a GRU state, Bahdanau's
additive score, a mistake's cell beside the right one, a cached key beside its recomputation, a
sliding window's mask entry), for the explorer's "where did this number come from" panel.

``book`` replays the chapter's printed example with its modules and seeds;
``checks`` holds every input check and limit; ``seeding`` the book's
``torch.manual_seed`` made safe for a server. ``mistakes`` runs common
mistakes (one changed line each, written in ``mistake_steps``) beside the right
code and measures them (``mistake_measures``). The subpackage ``notebook``,
imported only when used, is for a reader's own classes: ``notebook.check(module)``
compares one typed from the book with the package's, stage by stage.

Beside the math, imported only when used and needing the notebook extra (plotly, numpy), what the app and
``notebook.explore`` both show: ``figures``, pure figure builders (a matrix's heatmap with clickable cells,
charts), and ``prose``, a cell's derivation in words (``prose.cells``) and the glossary (``prose.glossary``).

Example, reproducing the chapter's last printed output::

    import torch
    from attention import BOOK_INPUTS, MultiHeadAttention
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
    mha(torch.stack([BOOK_INPUTS, BOOK_INPUTS]))[0, 0]  # tensor([0.3190, 0.4858])
"""

import importlib

# The one list of what the package holds. Its names are imported on first use (PEP 562), so that
# ``import attention`` costs nothing and an app can read ``constants`` before torch is imported;
# ``from attention import X`` works as usual.
_EXPORTS = {  # every submodule, in alphabetical order -> the names the package exports from it
    "after_chapter.generation": ("GPTWithCache", "GeneratedToken", "Generation", "generate", "random_gpt"),
    "after_chapter.gpt": ("GPTModel",),
    "after_chapter.gpt2": ("gpt2_from_environment", "load_gpt2"),
    "after_chapter.gqa": ("GroupedQueryAttention",),
    "after_chapter.inspecting": ("HeadSummary", "LayerInput", "every_layer_weights", "head_summaries", "layer_input"),
    "after_chapter.kv_cache": ("CachedMultiHeadAttention", "CachedSteps", "KVCache", "sliding_window_mask"),
    "after_chapter.training": ("load_gpt", "load_trained_gpt"),
    "before_chapter.bahdanau": (
        "GRUWeights",
        "SelfAttentionContrast",
        "Seq2SeqTrace",
        "Seq2SeqWeights",
        "additive_scores",
        "contrast_weights",
        "encoder_decoder",
        "gru_input_part",
        "gru_step",
        "self_attention_contrast",
        "seq2seq_weights",
    ),
    "before_chapter.reversal": (
        "TRAINED_NOTE",
        "BottleneckCurve",
        "ReversalAlignment",
        "ReversalSeq2Seq",
        "bottleneck_curve",
        "load_reversal",
        "trained_alignment",
    ),
    "book": ("BookValues", "book_values"),
    "checks": (),
    "causal": (
        "CausalAttention",
        "MaskingComparison",
        "causal_mask",
        "compare_masking",
        "mask_by_renormalizing",
        "mask_with_neg_inf",
    ),
    "constants": (
        "BOOK_SENTENCE",
        "BOOK_TOKENS",
        "CHECKPOINT_VARIABLE",
        "UNTRAINED_NOTE",
        "VERDICT_CONFIG",
        "GPT2Checkpoint",
        "GPTConfig",
    ),
    "derivations": ("Derivation", "Term"),
    "dropout": (
        "DropoutAverage",
        "DropoutDraw",
        "apply_dropout",
        "drop_with_mask",
        "dropout_average",
        "dropout_keep_mask",
    ),
    "embeddings": ("BOOK_INPUTS", "embed_tokens", "token_vector"),
    "measuring.costs": ("CACHE_SHAPES", "CacheShape", "MacCount", "cache_bytes_per_token", "macs_per_new_token"),
    "measuring.fast": ("fast_multihead",),
    "measuring.generation_speed": ("TokenTimes", "measure_token_times"),
    "measuring.speed": (
        "IMPLEMENTATIONS",
        "Growth",
        "Plan",
        "SpeedResult",
        "expected_attention_bytes",
        "measure",
        "plan_measurement",
    ),
    "mistake_measures": ("Measure", "SaturationCurve"),
    "mistake_steps": (),
    "mistakes": ("MISTAKES", "Mistake", "MistakeRun", "run_mistake"),
    "multihead": (
        "HEADS_EXAMPLE",
        "HeadsProduct",
        "MultiHeadAttention",
        "MultiHeadAttentionWrapper",
        "heads_product",
        "multihead_from_wrapper",
        "to_torch_multihead",
    ),
    "seeding": (),
    "simplified": (
        "NormalizationComparison",
        "SimplifiedAttention",
        "attention_loop",
        "compare_normalizations",
        "context_contributions",
        "normalize_by_sum",
        "overflow_demo",
        "simplified_attention",
        "softmax_naive",
    ),
    "tokens": ("Tokenization", "decode_pieces", "load_bpe", "tokenize"),
    "tracing": ("Trace", "build", "trace"),
    "trainable": (
        "AttentionSteps",
        "ScalingLab",
        "SelfAttention_v1",
        "SelfAttention_v2",
        "load_v2_weights_into_v1",
        "scaling_lab",
    ),
}
SUBMODULES = tuple(_EXPORTS)  # dotted below the package: "tracing", "after_chapter.gpt"
# Imported on first use too: the chapter's neighbours, ``notebook.check``, which tests a reader's own classes, and
# the figures and words shown with the numbers.
SUBPACKAGES = ("after_chapter", "before_chapter", "figures", "measuring", "notebook", "prose")
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    """Import the submodule that holds ``name`` (or the submodule ``name``) on first use."""
    if name in _WHERE:
        value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    elif name in SUBMODULES or name in SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *(m for m in SUBMODULES if "." not in m), *SUBPACKAGES})
