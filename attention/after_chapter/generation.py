"""After chapter 3: a GPT writes token by token, with and without a KV cache.

Chapter 4's ``generate_text_simple`` runs the whole text through the model
for every new token and keeps only the last row of logits. ``generate`` does
that with ``use_cache=False``. With ``use_cache=True`` it gives the prompt to
the model once, then only each new token: every block's attention keeps the
keys and values it has made in a ``KVCache`` (``kv_cache``), and the new
token's position embedding continues after the cached ones. Both give the
same tokens; the cache only saves work.

``GPTWithCache`` runs a ``gpt.GPTModel``'s own blocks with caches, through
``CachedMultiHeadAttention.sharing``: the same weights, no copies, and
``gpt.py`` unchanged. Each generated token comes with its id, the ten most
likely next tokens, every layer's attention row of the token that chose it,
and the cache's size.

Choosing a token follows chapter 5: ``temperature=0`` takes the most likely
one (greedy); a positive temperature divides the logits before the softmax and
draws from it, with a private generator seeded by ``seed``, after keeping only
the ``top_k`` largest logits when ``top_k`` is given.

Shapes use b (batch), T (tokens so far), d (emb_dim), V (vocab_size).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .gpt import GPT2_SMALL, GPTConfig, GPTModel, check_ids
from .kv_cache import CachedMultiHeadAttention, KVCache

MAX_NEW_TOKENS = 200  # the most tokens one call generates
TOP_N = 10  # how many likely next tokens each step reports


def random_gpt(cfg: GPTConfig = GPT2_SMALL, seed: int = 123) -> GPTModel:
    """An untrained ``GPTModel`` of shape ``cfg`` (GPT-2 small by default) from ``seed``, in eval mode.

    Embeddings start at N(0, 0.02²) as GPT-2's do (``nn.Embedding``'s N(0, 1)
    gives enormous logits through a tied ``out_head``). The global random
    state is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPTModel(cfg)
        for embedding in (model.tok_emb, model.pos_emb):
            torch.nn.init.normal_(embedding.weight, std=0.02)
    return model.eval()


@dataclass(frozen=True)
class GPTStep:
    """What one step of the model gives: the last token's logits and each layer's attention for it.

    Shapes: ``logits`` (b, V); ``attn_rows[layer]`` (b, num_heads, T), the
    last token's row of attention weights over every key so far; ``caches``
    one ``KVCache`` per layer, or ``None`` without a cache.
    """

    logits: torch.Tensor
    attn_rows: tuple[torch.Tensor, ...]
    caches: tuple[KVCache, ...] | None


def step_without_cache(model: GPTModel, in_idx: torch.Tensor) -> GPTStep:
    """The whole text through ``model``'s blocks, as ``GPTModel.forward`` does, keeping attention weights.

    Every row gets logits, as in chapter 4's ``generate_text_simple``; only
    the last is returned. Shapes: in_idx (b, T).
    """
    x = model.embed(in_idx)  # (b, T, d)
    attn_rows = []
    for block in model.trf_blocks:
        shortcut = x
        steps = block.att.steps(block.norm1(x))  # the chapter's MultiHeadAttention, every row
        attn_rows.append(steps.attn_weights[:, :, -1, :])  # (b, num_heads, T)
        x = block.drop_shortcut(steps.output) + shortcut  # (b, T, d)
        x = block.drop_shortcut(block.ff(block.norm2(x))) + x  # (b, T, d)
    logits = model.out_head(model.final_norm(x))  # (b, T, V)
    return GPTStep(logits[:, -1, :], tuple(attn_rows), None)  # (b, V)


class GPTWithCache:
    """A ``GPTModel``'s blocks, each attention run with a ``KVCache``, the model's own weights.

    ``step(new_idx, caches)`` feeds only the new tokens: the whole prompt on
    the first call (``caches=None``), then one token at a time with the caches
    the previous call returned.
    """

    def __init__(self, model: GPTModel):
        self.model = model
        self.attentions = tuple(CachedMultiHeadAttention.sharing(block.att) for block in model.trf_blocks)

    def step(self, new_idx: torch.Tensor, caches: tuple[KVCache, ...] | None = None) -> GPTStep:
        """Shapes: new_idx (b, num_new) → logits (b, V) of the last new token, caches one token per id longer."""
        model = self.model
        start = 0 if caches is None else caches[0].num_tokens
        if caches is None:
            caches = (None,) * len(self.attentions)
        elif len(caches) != len(self.attentions):
            raise ValueError(f"The model has {len(self.attentions)} layers but {len(caches)} caches were passed.")
        num_new = new_idx.shape[1]
        if start + num_new > model.cfg.context_length:
            raise ValueError(
                f"The caches hold {start} tokens; {num_new} more would pass the model's "
                f"context_length of {model.cfg.context_length}."
            )
        tok_embeds = model.tok_emb(new_idx)  # (b, num_new, d)
        pos_embeds = model.pos_emb(torch.arange(start, start + num_new, device=new_idx.device))  # (num_new, d)
        x = model.drop_emb(tok_embeds + pos_embeds)  # (b, num_new, d): positions continue after the cache
        attn_rows, new_caches = [], []
        for block, attention, cache in zip(model.trf_blocks, self.attentions, caches, strict=True):
            shortcut = x
            steps = attention.steps(block.norm1(x), cache)  # keys and values of the new tokens appended
            attn_rows.append(steps.attn_weights[:, :, -1, :])  # (b, num_heads, start + num_new)
            new_caches.append(steps.cache)
            x = block.drop_shortcut(steps.output) + shortcut  # (b, num_new, d)
            x = block.drop_shortcut(block.ff(block.norm2(x))) + x  # (b, num_new, d)
        logits = model.out_head(model.final_norm(x[:, -1, :]))  # (b, V): only the last token needs logits
        return GPTStep(logits, tuple(attn_rows), tuple(new_caches))


@dataclass(frozen=True)
class GeneratedToken:
    """One generated token and what the model computed to choose it.

    ``probs_top`` are the largest probabilities of the distribution the token
    was chosen from (after temperature and top-k), ``ids_top`` their tokens.
    ``attn_rows[layer]`` is the attention of the last token before this one
    (the query that chose it) over itself and every earlier token.
    ``cache_tokens`` and ``cache_bytes`` are the caches' size after the step,
    all layers together (0 without a cache).

    Shapes: ``logits`` (V,); ``attn_rows[layer]`` (num_heads, T).
    """

    token_id: int
    ids_top: tuple[int, ...]
    probs_top: tuple[float, ...]
    logits: torch.Tensor
    attn_rows: tuple[torch.Tensor, ...]
    cache_tokens: int
    cache_bytes: int


@dataclass(frozen=True)
class Generation:
    """A prompt and the tokens generated after it, with how they were chosen."""

    prompt_ids: tuple[int, ...]
    tokens: tuple[GeneratedToken, ...]
    use_cache: bool
    temperature: float
    top_k: int | None
    seed: int

    @property
    def new_ids(self) -> tuple[int, ...]:
        return tuple(token.token_id for token in self.tokens)

    @property
    def ids(self) -> tuple[int, ...]:
        return self.prompt_ids + self.new_ids


def check_sampling(temperature: float, top_k: int | None, vocab_size: int) -> None:
    """``temperature`` in [0, 100] and ``top_k`` ``None`` or a whole number up to ``vocab_size``."""
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature <= 100:
        raise ValueError(
            f"temperature must be a number from 0 (always the likeliest token) to 100, got {temperature!r}."
        )
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocab_size):
        raise ValueError(f"top_k must be None or a whole number from 1 to {vocab_size}, got {top_k!r}.")


def check_length(prompt_tokens: int, max_new_tokens: int, context_length: int) -> None:
    """At most ``MAX_NEW_TOKENS`` new tokens, and the prompt and them within ``context_length``."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a whole number, at least 1; got {max_new_tokens!r}.")
    if max_new_tokens > MAX_NEW_TOKENS:
        raise ValueError(f"One call generates at most {MAX_NEW_TOKENS} tokens; {max_new_tokens} were asked for.")
    if prompt_tokens + max_new_tokens > context_length:
        raise ValueError(
            f"The prompt has {prompt_tokens} tokens and {max_new_tokens} more were asked for, but this model "
            f"reads at most {context_length} (its context_length). Ask for at most "
            f"{max(context_length - prompt_tokens, 0)} new tokens, or shorten the prompt."
        )


def choose_token(
    logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator
) -> tuple[int, torch.Tensor]:
    """The next token's id and the distribution it was chosen from. Shapes: logits (V,) → probs (V,)."""
    if top_k is not None:
        kth_largest = torch.topk(logits, top_k).values[-1]  # (): the smallest logit kept
        logits = logits.masked_fill(logits < kth_largest, -torch.inf)  # (V,)
    if temperature == 0:
        return int(logits.argmax()), torch.softmax(logits, dim=-1)  # (V,)
    probs = torch.softmax(logits / temperature, dim=-1)  # (V,)
    return int(torch.multinomial(probs, 1, generator=generator)), probs


def generate(
    model: GPTModel,
    ids,
    max_new_tokens: int,
    *,
    use_cache: bool = True,
    temperature: float = 0.0,
    top_k: int | None = None,
    seed: int = 123,
) -> Generation:
    """Generate ``max_new_tokens`` tokens after the token ids ``ids``, one at a time (eval mode, no dropout).

    Raises a ``ValueError`` if the prompt and the new tokens together would
    pass the model's ``context_length`` (``generate_text_simple`` would drop
    the oldest tokens instead; the cache's positions cannot), or past
    ``MAX_NEW_TOKENS``.
    """
    in_idx = check_ids(ids, model.cfg)  # (1, T)
    check_length(in_idx.shape[1], max_new_tokens, model.cfg.context_length)
    check_sampling(temperature, top_k, model.cfg.vocab_size)
    generator = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    tokens = []
    try:
        with torch.no_grad():
            cached_model = GPTWithCache(model) if use_cache else None
            new_idx, caches = in_idx, None  # the first step reads the whole prompt
            for _ in range(max_new_tokens):
                if use_cache:
                    step = cached_model.step(new_idx, caches)
                    caches = step.caches
                else:
                    step = step_without_cache(model, in_idx)
                token_id, probs = choose_token(step.logits[0], temperature, top_k, generator)
                top = torch.topk(probs, TOP_N)  # values and indices, (TOP_N,) each
                tokens.append(
                    GeneratedToken(
                        token_id=token_id,
                        ids_top=tuple(top.indices.tolist()),
                        probs_top=tuple(top.values.tolist()),
                        logits=step.logits[0],
                        attn_rows=tuple(row[0] for row in step.attn_rows),
                        cache_tokens=caches[0].num_tokens if use_cache else 0,
                        cache_bytes=sum(cache.nbytes for cache in caches) if use_cache else 0,
                    )
                )
                new_idx = torch.tensor([[token_id]])  # (1, 1)
                in_idx = torch.cat([in_idx, new_idx], dim=1)  # (1, T + 1)
    finally:
        model.train(was_training)
    prompt_ids = tuple(check_ids(ids, model.cfg)[0].tolist())
    return Generation(prompt_ids, tuple(tokens), use_cache, float(temperature), top_k, seed)
