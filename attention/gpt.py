"""After chapter 3: the chapter-4 GPT model, built from this package's ``MultiHeadAttention``.

Chapter 3 ends with ``MultiHeadAttention`` and random weights. Chapter 4
wraps it into a transformer block (LayerNorm, attention, a feed-forward
layer, shortcut connections) and stacks blocks into ``GPTModel``; chapter 5
trains it on Edith Wharton's "The Verdict". This module does both at a small
size, so the app can show attention that has *learned* something:

* ``GPTModel`` is the book's model with the book's names (``tok_emb``,
  ``pos_emb``, ``trf_blocks``, ``att``, ``ff``, ``norm1``, ``norm2``,
  ``final_norm``, ``out_head``), so the book's state dicts load into it.
* ``train_gpt`` trains a small one from a fixed seed on one CPU thread.
* ``layer_input`` gives one layer's own ``MultiHeadAttention`` and the
  input that layer really gets, for ``trace``; ``every_layer_weights``
  gives every layer's attention weights from one pass through the model.
* ``head_summaries`` turns a layer's weights into a few numbers per head, and ``first_value_ratio``
  measures the first token's value vectors beside the others'.

Shapes use b (batch), T (num_tokens), d (emb_dim), h (num_heads).
"""

from __future__ import annotations

import functools
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from .constants import GPT2_SMALL, VERDICT_CONFIG, GPTConfig  # noqa: F401  (exported here too)
from .multihead import MultiHeadAttention

WEIGHTS_DIR = Path(__file__).parent / "weights"
VERDICT_WEIGHTS = WEIGHTS_DIR / "gpt_verdict.safetensors"
VERDICT_METRICS = WEIGHTS_DIR / "gpt_verdict.json"
VERDICT_NAME = "the-verdict.txt"
VERDICT_SEED = 123


class LayerNorm(nn.Module):
    """Normalize each token's vector to mean 0, variance 1, then learn a ``scale`` and ``shift`` (section 4.2)."""

    def __init__(self, emb_dim: int):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1)
        norm_x = (x - mean) / torch.sqrt(var + self.eps)  # (..., d)
        return self.scale * norm_x + self.shift  # (..., d)


class GELU(nn.Module):
    """GELU with GPT-2's tanh approximation (section 4.3)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))  # (..., any)


class FeedForward(nn.Module):
    """Widen to 4 * emb_dim, GELU, narrow back: the same small network for every token (section 4.3)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(cfg.emb_dim, 4 * cfg.emb_dim),
            GELU(),
            nn.Linear(4 * cfg.emb_dim, cfg.emb_dim),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)  # (b, T, d)


class TransformerBlock(nn.Module):
    """Chapter 3's ``MultiHeadAttention`` and a feed-forward layer, each after a LayerNorm and
    each added back onto its input through a shortcut connection (section 4.5).

    Shapes: x (b, T, d) → (b, T, d).
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg.emb_dim,
            d_out=cfg.emb_dim,
            context_length=cfg.context_length,
            dropout=cfg.drop_rate,
            num_heads=cfg.n_heads,
            qkv_bias=cfg.qkv_bias,
        )
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg.emb_dim)
        self.norm2 = LayerNorm(cfg.emb_dim)
        self.drop_shortcut = nn.Dropout(cfg.drop_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.norm1(x)  # (b, T, d): what the attention layer reads
        x = self.att(x)  # (b, T, d)
        x = self.drop_shortcut(x)
        x = x + shortcut  # (b, T, d)

        shortcut = x
        x = self.norm2(x)  # (b, T, d)
        x = self.ff(x)  # (b, T, d)
        x = self.drop_shortcut(x)
        return x + shortcut  # (b, T, d)


class GPTModel(nn.Module):
    """The book's GPT (section 4.6): token and position embeddings, ``n_layers`` blocks,
    a final LayerNorm and a linear ``out_head`` that scores every vocabulary token.

    With ``cfg.tie_weights`` the ``out_head`` is ``tok_emb``'s matrix (GPT-2's
    "weight tying"), which halves the parameters of a small model.

    Shapes: in_idx (b, T) token ids → logits (b, T, vocab_size).
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.emb_dim)
        self.pos_emb = nn.Embedding(cfg.context_length, cfg.emb_dim)
        self.drop_emb = nn.Dropout(cfg.drop_rate)
        self.trf_blocks = nn.Sequential(*[TransformerBlock(cfg) for _ in range(cfg.n_layers)])
        self.final_norm = LayerNorm(cfg.emb_dim)
        self.out_head = nn.Linear(cfg.emb_dim, cfg.vocab_size, bias=False)
        if cfg.tie_weights:
            self.out_head.weight = self.tok_emb.weight

    def embed(self, in_idx: torch.Tensor) -> torch.Tensor:
        """Token plus position embeddings, the first layer's input. Shapes: (b, T) → (b, T, d)."""
        num_tokens = in_idx.shape[1]
        tok_embeds = self.tok_emb(in_idx)  # (b, T, d)
        pos_embeds = self.pos_emb(torch.arange(num_tokens, device=in_idx.device))  # (T, d)
        return self.drop_emb(tok_embeds + pos_embeds)  # (b, T, d)

    def forward(self, in_idx: torch.Tensor) -> torch.Tensor:
        x = self.embed(in_idx)  # (b, T, d)
        x = self.trf_blocks(x)  # (b, T, d)
        x = self.final_norm(x)  # (b, T, d)
        return self.out_head(x)  # (b, T, vocab_size)


def check_ids(ids, cfg: GPTConfig) -> torch.Tensor:
    """Token ids as a (1, T) tensor, or a ``ValueError`` a learner understands."""
    try:
        in_idx = torch.as_tensor(list(ids), dtype=torch.long)  # (T,)
    except (TypeError, ValueError, RuntimeError) as error:
        raise ValueError("Token ids must be a list of whole numbers.") from error
    if in_idx.dim() != 1 or in_idx.numel() == 0:
        raise ValueError("The model needs at least one token id.")
    if in_idx.numel() > cfg.context_length:
        raise ValueError(
            f"This model reads at most {cfg.context_length} tokens (its context_length); "
            f"the sentence has {in_idx.numel()}. Shorten it."
        )
    if (in_idx < 0).any() or (in_idx >= cfg.vocab_size).any():
        raise ValueError(f"Token ids must lie between 0 and {cfg.vocab_size - 1}, the model's vocabulary.")
    return in_idx.unsqueeze(0)  # (1, T)


@dataclass(frozen=True)
class LayerInput:
    """One transformer block's attention, and what the model feeds it for a sentence.

    ``attention`` is the block's own ``MultiHeadAttention`` (its real
    ``W_query``/``W_key``/``W_value``), so ``trace(attention, inputs)`` shows
    the model's real attention. ``inputs`` is the embeddings after every block
    below ``layer``, then this block's ``norm1``.

    Shapes: ``inputs`` (1, T, emb_dim); ``layer`` and ``num_layers`` are ints.
    """

    attention: MultiHeadAttention
    inputs: torch.Tensor
    layer: int
    num_layers: int


def layer_input(model: GPTModel, ids, layer: int) -> LayerInput:
    """The attention module of block ``layer`` and its input for the sentence ``ids`` (eval mode, no dropout)."""
    n_layers = model.cfg.n_layers
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < n_layers:
        raise ValueError(f"layer must be a whole number from 0 to {n_layers - 1}, got {layer!r}.")
    in_idx = check_ids(ids, model.cfg)  # (1, T)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            x = model.embed(in_idx)  # (1, T, d)
            for block in model.trf_blocks[:layer]:
                x = block(x)  # (1, T, d)
            inputs = model.trf_blocks[layer].norm1(x)  # (1, T, d)
    finally:
        model.train(was_training)
    return LayerInput(attention=model.trf_blocks[layer].att, inputs=inputs, layer=layer, num_layers=n_layers)


def every_layer_weights(model: GPTModel, ids) -> torch.Tensor:
    """Every layer's attention weights for the sentence ``ids``, from one pass through the model (eval mode).

    Each block runs as ``TransformerBlock.forward`` does, with its attention's ``steps`` in place of its
    forward, so the weights come out on the way; ``layer_input`` and ``trace`` give the same for one layer.
    Dropout does nothing in eval mode, so ``drop_shortcut`` is left out.

    Shapes: ids (T,) → (n_layers, h, T, T).
    """
    in_idx = check_ids(ids, model.cfg)  # (1, T)
    was_training = model.training
    model.eval()
    weights = []
    try:
        with torch.no_grad():
            x = model.embed(in_idx)  # (1, T, d)
            for block in model.trf_blocks:
                steps = block.att.steps(block.norm1(x))  # attn_weights (1, h, T, T), output (1, T, d)
                weights.append(steps.attn_weights[0])  # (h, T, T)
                x = x + steps.output  # (1, T, d): the shortcut around attention
                x = x + block.ff(block.norm2(x))  # (1, T, d): the shortcut around the feed-forward layer
    finally:
        model.train(was_training)
    return torch.stack(weights)  # (n_layers, h, T, T)


@dataclass(frozen=True)
class HeadSummary:
    """A few numbers per head that say what each head looks at, averaged over query rows 1..T-1.

    * ``previous_token``: weight on the token just before the query.
    * ``first_token``: weight on token 0. A common explanation: every row can
      see token 0 and the softmax must put its weight somewhere, so a head with
      nothing useful to find may park it there (an "attention sink"), which
      costs little when token 0's value vector is small (``first_value_ratio``).
    * ``entropy``: each row's entropy in nats; 0 means one token gets
      everything, ``uniform_entropy`` is what spreading evenly would give.
    * ``mean_distance``: how many tokens back the weight lies, on average
      (1.0 for a pure previous-token head).

    Row 0 is left out: it can only see itself. Shapes: each tensor (h,);
    ``uniform_entropy`` is a float.
    """

    previous_token: torch.Tensor
    first_token: torch.Tensor
    entropy: torch.Tensor
    mean_distance: torch.Tensor
    uniform_entropy: float


def head_summaries(attn_weights: torch.Tensor) -> HeadSummary:
    """Summarize causal attention weights of shape (h, T, T) or (1, h, T, T), T ≥ 2."""
    weights = attn_weights[0] if attn_weights.dim() == 4 else attn_weights  # (h, T, T)
    if weights.dim() != 3 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2:
        raise ValueError(
            f"head_summaries needs weights of shape (h, T, T) with at least 2 tokens, got {tuple(attn_weights.shape)}."
        )
    num_tokens = weights.shape[-1]
    rows = weights[:, 1:]  # (h, T-1, T)
    previous = torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1)  # (h, T-1)
    row_entropy = -(rows * torch.log(rows.clamp_min(1e-12))).sum(dim=-1)  # (h, T-1)
    positions = torch.arange(num_tokens)  # (T,)
    distance = (positions.unsqueeze(1) - positions.unsqueeze(0)).clamp_min(0)[1:]  # (T-1, T): i - j
    uniform = torch.log(torch.arange(2, num_tokens + 1, dtype=torch.float64)).mean().item()
    return HeadSummary(
        previous_token=previous.mean(dim=-1),  # (h,)
        first_token=rows[..., 0].mean(dim=-1),  # (h,)
        entropy=row_entropy.mean(dim=-1),  # (h,)
        mean_distance=(rows * distance).sum(dim=-1).mean(dim=-1),  # (h,)
        uniform_entropy=uniform,
    )


def first_value_ratio(values: torch.Tensor) -> torch.Tensor:
    """Each head's first-token value vector, its length as a multiple of the other tokens' mean length.

    The common account of an attention sink says that weight parked on the first token costs little when its
    value vector is small: below 1 the first token passes on less than the others would, above 1 more.

    Shapes: values (h, T, head_dim) or (1, h, T, head_dim), T ≥ 2 → (h,).
    """
    per_head = values[0] if values.dim() == 4 else values  # (h, T, head_dim)
    if per_head.dim() != 3 or per_head.shape[1] < 2:
        raise ValueError(f"first_value_ratio needs values (h, T, head_dim) with T ≥ 2, got {tuple(values.shape)}.")
    lengths = per_head.norm(dim=-1)  # (h, T)
    return lengths[:, 0] / lengths[:, 1:].mean(dim=-1)  # (h,)


# Saving and loading, safetensors only: a weight file holds tensors and a JSON config, never code.


def gpt_state(model: GPTModel, dtype: torch.dtype = torch.float16) -> dict[str, torch.Tensor]:
    """The tensors worth storing: no ``mask`` buffers (the model rebuilds them), no tied ``out_head``."""
    state = {}
    for name, tensor in model.state_dict().items():
        if name.endswith(".att.mask") or (model.cfg.tie_weights and name == "out_head.weight"):
            continue
        state[name] = tensor.detach().to(dtype).contiguous()
    return state


def save_gpt(model: GPTModel, path: Path, dtype: torch.dtype = torch.float16) -> None:
    from safetensors.torch import save_file

    save_file(gpt_state(model, dtype), str(path), metadata={"config": json.dumps(asdict(model.cfg))})


def load_state_into(model: GPTModel, state: dict[str, torch.Tensor]) -> GPTModel:
    """Copy ``state`` into ``model``; ``mask`` buffers and a tied ``out_head`` may be absent.

    Anything else missing, unexpected or of the wrong shape raises a ``ValueError`` naming it.
    """
    own = model.state_dict()
    optional = {n for n in own if n.endswith(".att.mask")}
    if model.cfg.tie_weights:
        optional.add("out_head.weight")
    missing = sorted(set(own) - set(state) - optional)
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ValueError(f"The weights do not fit this model: missing {missing[:5]}, unexpected {unexpected[:5]}.")
    for name, tensor in state.items():
        if tuple(tensor.shape) != tuple(own[name].shape):
            raise ValueError(
                f"{name} has shape {tuple(tensor.shape)} in the file but the model needs {tuple(own[name].shape)}."
            )
    with torch.no_grad():
        for name, tensor in state.items():
            if name.endswith(".att.mask"):
                continue  # the model's own causal mask; a file's copy carries no learned numbers
            own[name].copy_(tensor.to(own[name].dtype))
    return model.eval()


def load_gpt(path: Path) -> GPTModel:
    """A ``GPTModel`` from a file ``save_gpt`` wrote, in float32 and eval mode."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        cfg = GPTConfig(**json.loads(f.metadata()["config"]))
        state = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    with torch.random.fork_rng(devices=[]):
        model = GPTModel(cfg)
    return load_state_into(model, state)


@functools.cache
def load_trained_gpt() -> GPTModel:
    """The small GPT trained on "The Verdict" that ships with the package (built once per process)."""
    return load_gpt(VERDICT_WEIGHTS)


# Training (chapter 5, in miniature)


def verdict_path() -> Path:
    """Where "The Verdict" lies beside a checkout: ``../shared/data/the-verdict.txt``."""
    return Path(__file__).resolve().parents[2] / "shared" / "data" / VERDICT_NAME


def encode_text(text: str) -> torch.Tensor:
    """GPT-2 BPE ids of ``text``. Shapes: → (num_ids,)."""
    from .tokens import load_bpe

    bpe = load_bpe()
    if bpe is None:
        raise ValueError("Training needs GPT-2's BPE rank file (attention/data/r50k_base.tiktoken).")
    return torch.tensor(bpe.encode(text, allowed_special={"<|endoftext|>"}), dtype=torch.long)


@dataclass(frozen=True)
class GPTTrainingLog:
    """What ``train_gpt`` measured. Losses are cross-entropy in nats per token, over the story's vocabulary."""

    losses: tuple[float, ...]  # mean training loss of each ``log_every`` steps
    train_loss: float  # at the end, eval mode, over the training split
    val_loss: float  # at the end, over the held-out last 10% of the text
    val_accuracy: float  # share of held-out next tokens the model ranks first
    story_vocab: int  # distinct tokens in the text: the softmax chooses among these
    steps: int
    seconds: float


def _windows(ids: torch.Tensor, context_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-overlapping (input, target) windows, target shifted by one. Shapes: → 2 x (n, context_length)."""
    n = (ids.numel() - 1) // context_length
    inputs = ids[: n * context_length].view(n, context_length)  # (n, context_length)
    targets = ids[1 : n * context_length + 1].view(n, context_length)  # (n, context_length)
    return inputs, targets


def _story_logits(model: GPTModel, inputs: torch.Tensor, vocab: torch.Tensor) -> torch.Tensor:
    """The model's logits for the tokens in ``vocab`` only. Shapes: (b, T) → (b, T, len(vocab))."""
    x = model.final_norm(model.trf_blocks(model.embed(inputs)))  # (b, T, d)
    return x @ model.out_head.weight[vocab].T  # (b, T, len(vocab))


def evaluate(model: GPTModel, ids: torch.Tensor, vocab: torch.Tensor) -> tuple[float, float]:
    """Mean next-token loss and top-1 accuracy over ``ids`` cut into context-length windows,
    choosing among the tokens in ``vocab`` (sorted), as ``train_gpt`` trains."""
    context_length = min(model.cfg.context_length, ids.numel() - 1)
    inputs, targets = _windows(ids, context_length)
    model.eval()
    with torch.no_grad():
        logits = _story_logits(model, inputs, vocab)  # (n, T, len(vocab))
        targets = torch.searchsorted(vocab, targets)  # (n, T): positions in vocab
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()
        accuracy = (logits.argmax(-1) == targets).float().mean().item()
    return loss, accuracy


def train_gpt(
    text: str,
    cfg: GPTConfig = VERDICT_CONFIG,
    steps: int = 1000,
    *,
    batch_size: int = 8,
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    seed: int = VERDICT_SEED,
    log_every: int = 25,
    progress=None,
) -> tuple[GPTModel, GPTTrainingLog]:
    """Train a ``GPTModel`` on ``text``: the first 90% to learn from, the last 10% held out, as in chapter 5.

    Each step reads ``batch_size`` windows of ``context_length`` tokens at
    random offsets (a private generator seeded by ``seed``) and takes an AdamW
    step on the next-token cross-entropy, the learning rate decaying along a
    cosine. ``progress(step, loss)`` is called every ``log_every`` steps.

    The softmax runs over the story's own vocabulary (about 1,100 of GPT-2's
    50,257 tokens) instead of all of it: that is 45 times less work per step,
    so a few minutes on one CPU thread suffice. The model keeps the full
    ``out_head``; tokens the story never uses keep their initial embeddings.
    Losses are reported over the story's vocabulary too.
    """
    ids = encode_text(text)  # (num_ids,)
    split = int(0.9 * ids.numel())
    train_ids, val_ids = ids[:split], ids[split:]  # (split,), (num_ids - split,)
    if train_ids.numel() <= cfg.context_length + 1 or val_ids.numel() < 2:
        raise ValueError(f"The text is too short to train on: {ids.numel()} tokens.")
    vocab = ids.unique()  # (story_vocab,), sorted
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPTModel(cfg)
        for embedding in (model.tok_emb, model.pos_emb):
            nn.init.normal_(embedding.weight, std=0.02)  # GPT-2's init; N(0, 1) gives huge tied logits
        generator = torch.Generator().manual_seed(seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps))
        )
        positions = torch.arange(cfg.context_length)  # (T,)
        losses, running, start = [], 0.0, time.perf_counter()
        for step in range(1, steps + 1):
            model.train()
            offsets = torch.randint(train_ids.numel() - cfg.context_length, (batch_size, 1), generator=generator)
            inputs = train_ids[offsets + positions]  # (b, T)
            targets = train_ids[offsets + positions + 1]  # (b, T)
            logits = _story_logits(model, inputs, vocab)  # (b, T, story_vocab)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), torch.searchsorted(vocab, targets).flatten())
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            running += loss.item()
            if step % log_every == 0 or step == steps:
                losses.append(running / (step - log_every * (len(losses))))
                running = 0.0
                if progress is not None:
                    progress(step, losses[-1])
    seconds = time.perf_counter() - start
    train_loss, _ = evaluate(model, train_ids, vocab)
    val_loss, val_accuracy = evaluate(model, val_ids, vocab)
    log = GPTTrainingLog(tuple(losses), train_loss, val_loss, val_accuracy, vocab.numel(), steps, seconds)
    return model.eval(), log
