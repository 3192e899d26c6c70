"""After stage 0: an encoder–decoder trained with and without Bahdanau attention (sections 3.1 and 3.2).

``bahdanau`` shows the mechanism with untrained weights; this module shows
what training does. ``ReversalSeq2Seq`` is an encoder–decoder trained to
write a sentence backwards, a task whose right alignment is known (the
anti-diagonal: output step i must copy input position num_tokens - 1 - i) and
which works on any sentence, because a GPT-2 id becomes one of
``REVERSAL_VOCAB`` symbols (id % REVERSAL_VOCAB) and the model only has to
move symbols, never understand them.

``trained_alignment`` shows its weights beside the untrained ones, and
``bottleneck_curve`` is the original paper's argument in numbers: accuracy
against sentence length with attention and without it. ``train_reversal``,
``save_reversal`` and ``measure_bottleneck`` are what ``scripts/train.py``
runs to make the shipped weights; ``load_reversal`` loads them.
"""

from __future__ import annotations

import copy
import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .bahdanau import MAX_NUM_TOKENS, additive_scores

REVERSAL_VOCAB = 16  # symbols the model reads and writes; token id → id % REVERSAL_VOCAB
REVERSAL_LENGTHS = (4, 40)  # sentence lengths it is trained on, both ends included
REVERSAL_SEED = 123
WEIGHTS_DIR = Path(__file__).parents[1] / "weights"
REVERSAL_FILES = {True: "reversal_attention.safetensors", False: "reversal_plain.safetensors"}
REVERSAL_METRICS = "reversal_metrics.json"
TRAINED_NOTE = (
    "Trained to output your sentence's tokens in reverse order (each token id becomes one of "
    f"{REVERSAL_VOCAB} symbols, id % {REVERSAL_VOCAB}). The right alignment is the anti-diagonal."
)


class ReversalSeq2Seq(nn.Module):
    """A GRU encoder–decoder that writes its input backwards, with or without Bahdanau attention.

    The encoder is Bahdanau's bidirectional GRU: a forward GRU reads symbols
    1..T, a backward one reads T..1, and annotation ``h_j`` is both states at
    j side by side. The decoder starts from the encoder's final states,
    [forward at T; backward at 1], and at each step reads a context vector
    and the symbol it wrote last (the right one while training).

    * ``use_attention=True``: ``additive_scores`` scores every annotation from
      the decoder state before the step, as in ``bahdanau.encoder_decoder``; the
      context is the weighted sum of the input tokens' *embeddings*, and the
      output symbol is read from the context alone. Bahdanau sums the
      annotations and reads the output from the decoder state too, but an
      annotation also knows its neighbors and the decoder state knows what it
      wrote last; trained that way, the model looked one token off, or split
      its weight between the right token and the one it had just written, and
      still got every symbol right. Summing embeddings and reading only the
      context leaves one way to write token j: look at token j. Scoring one
      thing (keys) and summing another (values) is the split chapter 3 makes
      with ``W_key`` and ``W_value``.
    * ``use_attention=False``: the context is the encoder's final states at
      every step (Cho et al., 2014), and the output is read from the decoder
      state and that context. The whole sentence must pass through one vector
      of ``2 * hidden_size`` numbers: the bottleneck.

    The encoder, the decoder's GRU and the training are the same for both.
    ``nn.GRUCell`` runs the GRU equations that ``gru_step`` writes out.

    Shapes: symbols (b, num_tokens) of ints in [0, vocab_size) →
    logits (b, num_tokens, vocab_size) and attn_weights (b, num_tokens, num_tokens),
    all zero without attention.
    """

    def __init__(
        self,
        use_attention: bool = True,
        vocab_size: int = REVERSAL_VOCAB,
        embedding_size: int = 16,
        hidden_size: int = 32,
        attention_size: int = 32,
    ):
        super().__init__()
        self.use_attention, self.vocab_size, self.hidden_size = use_attention, vocab_size, hidden_size
        annotation_size = 2 * hidden_size
        self.embedding = nn.Embedding(vocab_size + 1, embedding_size)  # the last row is START
        self.encoder_forward = nn.GRUCell(embedding_size, hidden_size)
        self.encoder_backward = nn.GRUCell(embedding_size, hidden_size)
        context_size = embedding_size if use_attention else annotation_size
        self.decoder = nn.GRUCell(context_size + embedding_size, annotation_size)
        self.W_a = nn.Linear(annotation_size, attention_size, bias=False)
        self.U_a = nn.Linear(annotation_size, attention_size, bias=False)
        self.v_a = nn.Parameter(torch.empty(attention_size).uniform_(-(attention_size**-0.5), attention_size**-0.5))
        self.out = nn.Linear(context_size if use_attention else annotation_size + context_size, vocab_size)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Bahdanau's annotations. Shapes: x (b, T, embedding_size) → (b, T, 2 * hidden_size)."""
        h_fwd = x.new_zeros(x.shape[0], self.hidden_size)  # (b, hidden_size)
        h_bwd = x.new_zeros(x.shape[0], self.hidden_size)  # (b, hidden_size)
        forward_states, backward_states = [], []
        for j in range(x.shape[1]):
            h_fwd = self.encoder_forward(x[:, j], h_fwd)  # (b, hidden_size)
            h_bwd = self.encoder_backward(x[:, -1 - j], h_bwd)  # (b, hidden_size)
            forward_states.append(h_fwd)
            backward_states.append(h_bwd)
        forward_states = torch.stack(forward_states, dim=1)  # (b, T, hidden_size)
        backward_states = torch.stack(backward_states[::-1], dim=1)  # (b, T, hidden_size)
        return torch.cat([forward_states, backward_states], dim=-1)  # (b, T, 2 * hidden_size)

    @property
    def start(self) -> int:
        return self.vocab_size

    def forward(self, symbols: torch.Tensor, targets: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Decode as many steps as there are inputs.

        With ``targets`` the decoder reads the right previous symbol (teacher
        forcing, for training); without, it reads its own best guess.
        """
        values = self.embedding(symbols)  # (b, T, embedding_size)
        annotations = self.encode(values)  # (b, T, 2 * hidden_size)
        b, num_tokens, _ = annotations.shape
        summary = torch.cat([annotations[:, -1, : self.hidden_size], annotations[:, 0, self.hidden_size :]], dim=-1)
        s = summary  # (b, 2 * hidden_size): the decoder starts from the encoder's final states
        key_parts = self.U_a(annotations)  # (b, T, attention_size)
        previous = symbols.new_full((b,), self.start)  # (b,)
        all_logits, all_weights = [], []
        for i in range(num_tokens):
            if self.use_attention:
                e = additive_scores(self.W_a(s), key_parts, self.v_a)  # (b, T)
                alpha = torch.softmax(e, dim=-1)  # (b, T)
                context = (alpha.unsqueeze(1) @ values).squeeze(1)  # (b, embedding_size)
            else:
                alpha = annotations.new_zeros(b, num_tokens)  # (b, T): no attention, no weights
                context = summary  # (b, 2 * hidden_size)
            s = self.decoder(torch.cat([context, self.embedding(previous)], dim=-1), s)  # (b, 2 * hidden_size)
            readout = context if self.use_attention else torch.cat([s, context], dim=-1)
            logits = self.out(readout)  # (b, vocab_size)
            previous = logits.argmax(dim=-1) if targets is None else targets[:, i]  # (b,)
            all_logits.append(logits)
            all_weights.append(alpha)
        return torch.stack(all_logits, dim=1), torch.stack(all_weights, dim=1)  # (b, T, V), (b, T, T)


def reversal_symbols(ids) -> torch.Tensor:
    """GPT-2 ids → the model's symbols, id % REVERSAL_VOCAB. Shapes: (num_tokens,) → (num_tokens,)."""
    ids = torch.as_tensor(list(ids), dtype=torch.long)  # (num_tokens,)
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError("The reversal model needs a sentence of at least one token id.")
    if ids.numel() > MAX_NUM_TOKENS:
        raise ValueError(f"The reversal model reads at most {MAX_NUM_TOKENS} tokens; this sentence has {ids.numel()}.")
    if (ids < 0).any():
        raise ValueError("Token ids must be whole numbers of 0 or more.")
    return ids % REVERSAL_VOCAB  # (num_tokens,)


def _random_reversals(generator: torch.Generator, batch_size: int, num_tokens: int) -> torch.Tensor:
    return torch.randint(REVERSAL_VOCAB, (batch_size, num_tokens), generator=generator)  # (b, num_tokens)


@dataclass(frozen=True)
class TrainingLog:
    """What a training run did: the loss every ``log_every`` steps, and its settings."""

    losses: tuple[float, ...]
    steps: int
    seconds: float


def train_reversal(
    use_attention: bool,
    steps: int = 1500,
    *,
    batch_size: int = 64,
    lr: float = 3e-3,
    lengths: tuple[int, int] = REVERSAL_LENGTHS,
    seed: int = REVERSAL_SEED,
    log_every: int = 50,
    progress=None,
) -> tuple[ReversalSeq2Seq, TrainingLog]:
    """Train a ``ReversalSeq2Seq`` on random sentences of ``lengths`` (shortest, longest), from ``seed``.

    Each step draws one length and ``batch_size`` random sentences from a
    private generator and minimizes cross-entropy with teacher forcing
    (Adam, gradients clipped to norm 1). The same seed gives the same model.
    ``progress(step, loss)`` is called every ``log_every`` steps.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ReversalSeq2Seq(use_attention)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses, running, start = [], 0.0, time.perf_counter()
    model.train()
    for step in range(1, steps + 1):
        num_tokens = int(torch.randint(lengths[0], lengths[1] + 1, (), generator=generator))
        symbols = _random_reversals(generator, batch_size, num_tokens)  # (b, num_tokens)
        targets = symbols.flip(1)  # (b, num_tokens)
        logits, _ = model(symbols, targets)  # (b, num_tokens, V)
        loss = nn.functional.cross_entropy(logits.reshape(-1, REVERSAL_VOCAB), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        running += loss.item()
        if step % log_every == 0 or step == steps:
            losses.append(running / (log_every if step % log_every == 0 else step % log_every))
            running = 0.0
            if progress is not None:
                progress(step, losses[-1])
    return model.eval(), TrainingLog(tuple(losses), steps, time.perf_counter() - start)


def reversal_accuracy(
    model: ReversalSeq2Seq, lengths=tuple(range(4, 41, 4)), num_sentences: int = 200, seed: int = 2024
) -> dict[int, float]:
    """The share of output symbols the model gets right, greedy decoding, by sentence length.

    Random sentences from a private generator seeded by ``seed``, so two
    models are measured on the same ones.
    """
    generator = torch.Generator().manual_seed(seed)
    accuracy = {}
    with torch.no_grad():
        for num_tokens in lengths:
            symbols = _random_reversals(generator, num_sentences, num_tokens)  # (n, num_tokens)
            logits, _ = model.eval()(symbols)  # (n, num_tokens, V)
            accuracy[num_tokens] = (logits.argmax(-1) == symbols.flip(1)).float().mean().item()
    return accuracy


def save_reversal(model: ReversalSeq2Seq, path: Path) -> None:
    """Write the model's weights with safetensors, its settings as JSON metadata."""
    from safetensors.torch import save_file

    settings = {
        "use_attention": model.use_attention,
        "vocab_size": model.vocab_size,
        "embedding_size": model.embedding.embedding_dim,
        "hidden_size": model.hidden_size,
        "attention_size": model.v_a.numel(),
    }
    state = {name: t.detach().contiguous() for name, t in model.state_dict().items()}
    save_file(state, str(path), metadata={"settings": json.dumps(settings)})


def load_reversal_file(path: Path) -> ReversalSeq2Seq:
    """A ``ReversalSeq2Seq`` from a file ``save_reversal`` wrote, in eval mode."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        settings = json.loads(f.metadata()["settings"])
        state = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    with torch.random.fork_rng(devices=[]):
        model = ReversalSeq2Seq(**settings)
    model.load_state_dict(state)
    return model.eval()


@functools.cache
def load_reversal(use_attention: bool = True) -> ReversalSeq2Seq:
    """The shipped trained reversal model, with or without attention (loaded once per process)."""
    return load_reversal_file(WEIGHTS_DIR / REVERSAL_FILES[use_attention])


@functools.cache
def untrained_reversal() -> ReversalSeq2Seq:
    """The attention model as it was before training: the same seed, no steps."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(REVERSAL_SEED)
        return ReversalSeq2Seq(use_attention=True).eval()


@dataclass(frozen=True)
class ReversalAlignment:
    """The trained and the untrained attention model reversing one sentence.

    ``trained_weights[i, j]`` is how much output step i attends to input
    position j; for reversal the right answer is j = num_tokens - 1 - i.
    ``output`` is the trained model's best symbol at each step.

    Shapes: ``symbols``, ``expected``, ``output`` (num_tokens,) of ints;
    ``trained_weights``, ``untrained_weights`` (num_tokens, num_tokens).
    """

    symbols: torch.Tensor
    expected: torch.Tensor
    output: torch.Tensor
    trained_weights: torch.Tensor
    untrained_weights: torch.Tensor

    @property
    def accuracy(self) -> float:
        """Share of output symbols the trained model got right."""
        return (self.output == self.expected).float().mean().item()

    @property
    def mean_max_weight(self) -> float:
        """Each decoder step's largest trained weight, averaged over steps (1/num_tokens = uniform)."""
        return self.trained_weights.max(dim=-1).values.mean().item()

    @property
    def untrained_mean_max_weight(self) -> float:
        return self.untrained_weights.max(dim=-1).values.mean().item()

    @property
    def on_anti_diagonal(self) -> float:
        """Trained weight on the right position, averaged over steps."""
        return self.trained_weights.flip(-1).diagonal().mean().item()


@functools.cache
def _alignment_models() -> tuple[ReversalSeq2Seq, ReversalSeq2Seq]:
    """float64 copies of the trained and the untrained attention model, for ``trained_alignment``."""
    return copy.deepcopy(load_reversal(True)).double(), copy.deepcopy(untrained_reversal()).double()


def trained_alignment(ids) -> ReversalAlignment:
    """Reverse a sentence of GPT-2 ``ids`` with the shipped trained model and with its untrained start.

    Each id becomes symbol id % REVERSAL_VOCAB. The model was trained on 4 to
    40 tokens; longer sentences work, with a blurrier alignment. The GRUs run in
    float64 and the weights come back as float32: in float32, torch's sums on
    two threads differ from one thread's in the last bit (1.8e-7 seen), and the
    numbers shown should not depend on the machine's threads.
    """
    symbols = reversal_symbols(ids)  # (num_tokens,)
    trained_model, untrained_model = _alignment_models()
    with torch.no_grad():
        logits, trained = trained_model(symbols.unsqueeze(0))  # (1, T, V), (1, T, T)
        _, untrained = untrained_model(symbols.unsqueeze(0))  # (1, T, T)
    return ReversalAlignment(
        symbols=symbols,
        expected=symbols.flip(0),
        output=logits[0].argmax(-1),
        trained_weights=trained[0].float(),
        untrained_weights=untrained[0].float(),
    )


@dataclass(frozen=True)
class BottleneckCurve:
    """Accuracy against sentence length, the same encoder–decoder with and without attention.

    Accuracy is the share of output symbols right, on the same random
    sentences for both. Shapes: three tuples of equal length.
    """

    lengths: tuple[int, ...]
    with_attention: tuple[float, ...]
    without_attention: tuple[float, ...]


def measure_bottleneck(
    with_attention: ReversalSeq2Seq | None = None,
    without_attention: ReversalSeq2Seq | None = None,
    lengths=tuple(range(4, 41, 4)),
    num_sentences: int = 200,
) -> BottleneckCurve:
    """Measure both models (the shipped ones by default) at each length; takes a few seconds."""
    with_attention = load_reversal(True) if with_attention is None else with_attention
    without_attention = load_reversal(False) if without_attention is None else without_attention
    a = reversal_accuracy(with_attention, lengths, num_sentences)
    b = reversal_accuracy(without_attention, lengths, num_sentences)
    return BottleneckCurve(tuple(lengths), tuple(a.values()), tuple(b.values()))


def bottleneck_curve() -> BottleneckCurve:
    """The curve ``scripts/train.py`` measured and stored beside the weights (instant)."""

    metrics = json.loads((WEIGHTS_DIR / REVERSAL_METRICS).read_text())["accuracy_by_length"]
    return BottleneckCurve(
        tuple(metrics["lengths"]), tuple(metrics["with_attention"]), tuple(metrics["without_attention"])
    )
