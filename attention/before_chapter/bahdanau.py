"""Stage 0: the problem attention solves, and Bahdanau attention (book sections 3.1 and 3.2).

Before self-attention, translation used an RNN *encoder–decoder*. The encoder
reads the input one token at a time and updates a hidden state; the decoder
starts from the encoder's *final* hidden state and writes the output. Every
input token has to squeeze through that one vector, and the chapter's point is
that early tokens get lost on the way. Bahdanau, Cho and Bengio (2014) let the
decoder look back at *every* encoder state instead: at each decoder step an
additive network scores each encoder state,
``score(s, h_j) = v_aᵀ tanh(W_a s + U_a h_j)``, a softmax turns the scores into
attention weights over the input positions, and the weighted sum of encoder
states is the step's *context vector*.

What this module adds to the chapter's pictures is a measurement of the
bottleneck. ``encoder_decoder`` asks autograd how strongly the final encoder
state depends on each input token, and how strongly the decoder's context
vector does; ``self_attention_contrast`` shows the step chapter 3 takes next,
one sequence attending to itself with dot products instead of a network.

``encoder_decoder``'s weights are random and **untrained**, drawn from a private
generator so a seed always gives the same numbers without touching torch's
global one. The
patterns show the mechanism, not a trained translation: an untrained additive
network scores every encoder state almost alike, so its weights are nearly
uniform. Training is what would sharpen them.

With these untrained weights the measure tells a clear story: each token
further back from the end has about two thirds of the next one's influence on
the final state, so the first of 24 tokens keeps almost none, while the
context vector, close to an even average of the encoder states, keeps about a
1/num_tokens share for every token. The tests check both, averaged over seeds.

The encoder is a one-directional GRU (Bahdanau used a bidirectional one), so
``h_j`` has read tokens 1..j, and the page can show it reading token by token.
The GRU equations are ``nn.GRUCell``'s, written out; the tests check them
against it. What training does to these weights is ``reversal``'s subject.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..constants import MAX_HIDDEN_SIZE, UNTRAINED_NOTE  # noqa: F401  (exported here too)
from ..embeddings import MAX_D_IN
from ..simplified import simplified_attention
from ..trainable import check_size

MAX_NUM_TOKENS = 1024
QUERY_BLOCK = 128  # queries scored per call in self_attention_contrast
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class GRUWeights:
    """One GRU cell's weights, named and stacked as in ``nn.GRUCell``.

    The rows of each are the reset gate ``r``, update gate ``z`` and candidate
    ``n``, in that order. Shapes: ``weight_ih`` (3 * hidden_size, input_size),
    ``weight_hh`` (3 * hidden_size, hidden_size), ``bias_ih`` and ``bias_hh``
    (3 * hidden_size,).
    """

    weight_ih: torch.Tensor
    weight_hh: torch.Tensor
    bias_ih: torch.Tensor
    bias_hh: torch.Tensor


@dataclass(frozen=True)
class Seq2SeqWeights:
    """Every weight of the encoder–decoder: two GRU cells and the additive attention network.

    Shapes: ``encoder`` takes d_in inputs, ``decoder`` takes hidden_size
    inputs (the context vector); ``W_a`` and ``U_a`` (attention_size,
    hidden_size); ``v_a`` (attention_size,).
    """

    encoder: GRUWeights
    decoder: GRUWeights
    W_a: torch.Tensor
    U_a: torch.Tensor
    v_a: torch.Tensor


@dataclass(frozen=True)
class Seq2SeqTrace:
    """One pass of the attention encoder–decoder, with the bottleneck measured.

    ``bahdanau_scores[i]`` and ``bahdanau_weights[i]`` are computed from the
    decoder state *before* step i (the encoder's final state for i = 0), as in
    Bahdanau's ``e_ij = a(s_{i-1}, h_j)``. ``attention_contexts[i]`` is the
    weighted sum of encoder states that decoder step i reads.

    ``final_state_influence[j]`` is the Frobenius norm of the Jacobian
    ∂final_state/∂x_j, where x_j is token j's embedding, computed by autograd.
    It sums over every direction in which token j could be nudged: moving x_j by
    a tiny ε in a random direction moves the final state by ε times this norm
    over sqrt(d_in), on average (root mean square). ``attention_context_influence``
    is the same norm for the context vector at decoder step ``influence_step``.
    Both are vectors of the same size, so their norms can be compared directly.
    The ``*_share`` properties divide each by its sum, for a bar chart.

    Shapes:

    - ``inputs`` (num_tokens, d_in)
    - ``encoder_states`` (num_tokens, hidden_size): h_j after reading tokens 1..j
    - ``final_state`` (hidden_size,): the last encoder state, all a plain decoder gets
    - ``decoder_states`` (num_steps, hidden_size)
    - ``bahdanau_scores``, ``bahdanau_weights`` (num_steps, num_tokens)
    - ``attention_contexts`` (num_steps, hidden_size)
    - ``final_state_influence``, ``attention_context_influence`` (num_tokens,)
    - ``influence_step`` and ``seed`` are ints
    """

    inputs: torch.Tensor
    encoder_states: torch.Tensor
    final_state: torch.Tensor
    decoder_states: torch.Tensor
    bahdanau_scores: torch.Tensor
    bahdanau_weights: torch.Tensor
    attention_contexts: torch.Tensor
    influence_step: int
    final_state_influence: torch.Tensor
    attention_context_influence: torch.Tensor
    seed: int

    @property
    def final_state_share(self) -> torch.Tensor:
        """Each token's share of the final state's influence; sums to 1. Shapes: (num_tokens,)."""
        return self.final_state_influence / self.final_state_influence.sum()  # (num_tokens,)

    @property
    def attention_context_share(self) -> torch.Tensor:
        """Each token's share of the context vector's influence; sums to 1. Shapes: (num_tokens,)."""
        return self.attention_context_influence / self.attention_context_influence.sum()  # (num_tokens,)


@dataclass(frozen=True)
class SelfAttentionContrast:
    """One sequence attending to itself, scored two ways.

    ``dot_product_*`` is chapter 3's simplified self-attention: the score of
    token i for token j is x_i · x_j, with nothing to learn.
    ``additive_*`` scores the same pairs with Bahdanau's network,
    v_aᵀ tanh(W_a x_i + U_a x_j), which has ``additive_num_parameters``
    (untrained) weights and must run a small network for every pair.

    Shapes: every tensor is (num_tokens, num_tokens); row i holds query i's
    scores or weights over all tokens j.
    """

    dot_product_scores: torch.Tensor
    dot_product_weights: torch.Tensor
    additive_scores: torch.Tensor
    additive_weights: torch.Tensor
    additive_num_parameters: int


def check_seq_inputs(inputs: torch.Tensor) -> None:
    """Raise a ``ValueError`` a learner understands unless ``inputs`` is a usable embedding matrix."""
    if not isinstance(inputs, torch.Tensor):
        raise ValueError("inputs must be a torch tensor of shape (num_tokens, d_in).")
    if inputs.dim() != 2:
        raise ValueError(f"inputs must have shape (num_tokens, d_in), one row per token; got {tuple(inputs.shape)}.")
    if inputs.shape[0] == 0:
        raise ValueError("inputs is empty: there must be at least one token.")
    if not inputs.is_floating_point():
        raise ValueError(
            f"inputs must hold embedding vectors (floating point), got {inputs.dtype}. "
            "Turn token ids into vectors first, for example with embed_tokens."
        )
    if inputs.shape[0] > MAX_NUM_TOKENS:
        raise ValueError(
            f"The encoder reads one token per step, at most {MAX_NUM_TOKENS} tokens; this input has {inputs.shape[0]}."
        )
    check_size("d_in", inputs.shape[1], upper=MAX_D_IN)
    if not torch.isfinite(inputs).all():
        raise ValueError("inputs contain nan or inf; every embedding value must be a finite number.")


def check_seed(seed: int) -> None:
    """Raise a ``ValueError`` unless ``seed`` is a whole number a ``torch.Generator`` accepts."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}.")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be between 0 and 2**63 - 1, got {seed}.")


def _uniform(generator: torch.Generator, shape: tuple[int, ...], bound: float) -> torch.Tensor:
    """Values drawn uniformly from [-bound, bound), as PyTorch initializes its layers."""
    return (torch.rand(shape, generator=generator) * 2 - 1) * bound  # (*shape)


def _gru_weights(generator: torch.Generator, input_size: int, hidden_size: int) -> GRUWeights:
    input_bound, hidden_bound = input_size**-0.5, hidden_size**-0.5
    return GRUWeights(
        weight_ih=_uniform(generator, (3 * hidden_size, input_size), input_bound),  # (3 * hidden_size, input_size)
        weight_hh=_uniform(generator, (3 * hidden_size, hidden_size), hidden_bound),  # (3 * hidden_size, hidden_size)
        bias_ih=_uniform(generator, (3 * hidden_size,), input_bound),  # (3 * hidden_size,)
        bias_hh=_uniform(generator, (3 * hidden_size,), hidden_bound),  # (3 * hidden_size,)
    )


def seq2seq_weights(
    d_in: int, hidden_size: int = 16, attention_size: int | None = None, seed: int = 123
) -> Seq2SeqWeights:
    """Untrained encoder–decoder weights, a pure function of the sizes and ``seed``.

    Every weight and bias is drawn from uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)),
    ``nn.Linear``'s default, where fan_in is the size of the vector it acts on:
    d_in for the encoder's input weights, attention_size for ``v_a``, and
    hidden_size for everything else. (``nn.GRU`` uses 1/sqrt(hidden_size) for
    its input weights too; with a large d_in that saturates the gates, and the
    encoder would behave differently for the book's 3-d vectors and a 768-d
    embedding.) The draws come from a private ``torch.Generator``, in the order
    encoder, decoder, ``W_a``, ``U_a``, ``v_a``. ``attention_size`` defaults to
    hidden_size.
    """
    check_size("d_in", d_in, upper=MAX_D_IN)
    check_size("hidden_size", hidden_size, upper=MAX_HIDDEN_SIZE)
    attention_size = hidden_size if attention_size is None else attention_size
    check_size("attention_size", attention_size, upper=MAX_HIDDEN_SIZE)
    check_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    encoder = _gru_weights(generator, d_in, hidden_size)
    decoder = _gru_weights(generator, hidden_size, hidden_size)
    bound = hidden_size**-0.5
    W_a = _uniform(generator, (attention_size, hidden_size), bound)  # (attention_size, hidden_size)
    U_a = _uniform(generator, (attention_size, hidden_size), bound)  # (attention_size, hidden_size)
    v_a = _uniform(generator, (attention_size,), attention_size**-0.5)  # (attention_size,)
    return Seq2SeqWeights(encoder=encoder, decoder=decoder, W_a=W_a, U_a=U_a, v_a=v_a)


def gru_input_part(weights: GRUWeights, x: torch.Tensor) -> torch.Tensor:
    """W_ih x + b_ih, the part of a GRU step that does not depend on the hidden state.

    ``nn.GRU`` computes it for every token at once before its loop, and so does
    the encoder here.

    Shapes: x (..., input_size) → (..., 3 * hidden_size).
    """
    return x @ weights.weight_ih.T + weights.bias_ih  # (..., 3 * hidden_size)


def gru_step(weights: GRUWeights, input_part: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """One GRU update, the RNN step of the encoder and the decoder.

    With ``input_part`` = W_ih x + b_ih split into its r, z and n thirds:
    r = σ(input_r + W_hr h + b_hr) decides how much of h the candidate sees,
    z = σ(input_z + W_hz h + b_hz) how much of h to keep,
    n = tanh(input_n + r ⊙ (W_hn h + b_hn)) is the candidate, and the new
    state is (1 - z) ⊙ n + z ⊙ h.

    Shapes: input_part (..., 3 * hidden_size), h (..., hidden_size) → (..., hidden_size).
    """
    hidden_part = h @ weights.weight_hh.T + weights.bias_hh  # (..., 3 * hidden_size)
    input_r, input_z, input_n = input_part.chunk(3, dim=-1)  # 3 x (..., hidden_size)
    hidden_r, hidden_z, hidden_n = hidden_part.chunk(3, dim=-1)  # 3 x (..., hidden_size)
    r = torch.sigmoid(input_r + hidden_r)  # (..., hidden_size)
    z = torch.sigmoid(input_z + hidden_z)  # (..., hidden_size)
    n = torch.tanh(input_n + r * hidden_n)  # (..., hidden_size)
    return (1 - z) * n + z * h  # (..., hidden_size)


def additive_scores(query_part: torch.Tensor, key_parts: torch.Tensor, v_a: torch.Tensor) -> torch.Tensor:
    """Bahdanau's score of one query against every key: v_aᵀ tanh(W_a s + U_a h_j).

    The projections come in already made, ``query_part`` = W_a s and
    ``key_parts[j]`` = U_a h_j: the keys' part does not change from one
    decoder step to the next, so it is computed once (as the paper notes).

    Shapes: query_part (..., attention_size), key_parts (..., num_tokens,
    attention_size), v_a (attention_size,) → (..., num_tokens).
    """
    return torch.tanh(query_part.unsqueeze(-2) + key_parts) @ v_a  # (..., num_tokens)


def _forward(weights: Seq2SeqWeights, input_parts: torch.Tensor, num_steps: int) -> tuple[torch.Tensor, ...]:
    """The encoder–decoder's forward pass, shared by the trace and the influence measure.

    Returns encoder_states (..., num_tokens, hidden_size), then
    decoder_states, bahdanau_scores, bahdanau_weights and attention_contexts,
    each with num_steps rows. The leading ``...`` is empty for the trace and
    holds one copy of the sentence per Jacobian row for ``_influence``.

    Shapes: input_parts (..., num_tokens, 3 * hidden_size).
    """
    hidden_size = weights.encoder.weight_hh.shape[1]
    h = input_parts.new_zeros((*input_parts.shape[:-2], hidden_size))  # (..., hidden_size)
    encoder_states = []
    for input_part in input_parts.unbind(-2):
        h = gru_step(weights.encoder, input_part, h)  # (..., hidden_size)
        encoder_states.append(h)
    encoder_states = torch.stack(encoder_states, dim=-2)  # (..., num_tokens, hidden_size)

    key_parts = encoder_states @ weights.U_a.T  # (..., num_tokens, attention_size)
    s = h  # (..., hidden_size): the decoder starts from the final state
    scores, attn_weights, contexts, decoder_states = [], [], [], []
    for _ in range(num_steps):
        e = additive_scores(s @ weights.W_a.T, key_parts, weights.v_a)  # (..., num_tokens)
        alpha = torch.softmax(e, dim=-1)  # (..., num_tokens)
        context = (alpha.unsqueeze(-2) @ encoder_states).squeeze(-2)  # (..., hidden_size)
        s = gru_step(weights.decoder, gru_input_part(weights.decoder, context), s)  # (..., hidden_size)
        scores.append(e)
        attn_weights.append(alpha)
        contexts.append(context)
        decoder_states.append(s)
    return (
        encoder_states,
        torch.stack(decoder_states, dim=-2),  # (..., num_steps, hidden_size)
        torch.stack(scores, dim=-2),  # (..., num_steps, num_tokens)
        torch.stack(attn_weights, dim=-2),  # (..., num_steps, num_tokens)
        torch.stack(contexts, dim=-2),  # (..., num_steps, hidden_size)
    )


def _influence(weights: Seq2SeqWeights, input_parts: torch.Tensor, influence_step: int) -> torch.Tensor:
    """‖∂final_state/∂x_j‖_F and ‖∂context/∂x_j‖_F for every token j, by autograd.

    Each of the 2 * hidden_size numbers measured (the final state's, then the
    context's) needs its own row of the Jacobian. To get all rows from one
    backward pass we run that many identical copies of the sentence as a batch
    and differentiate the sum of copy r's r-th number: copy r's gradient is
    row r. Token j's embedding enters only through its input part
    a_j = W_ih x_j + b_ih, so ∂output/∂x_j = (∂output/∂a_j) W_ih, and the squared
    Frobenius norm of J W_ih is the sum of (J G) ⊙ J with G = W_ih W_ihᵀ: d_in
    never enters the cost.

    Shapes: input_parts (num_tokens, 3 * hidden_size) → (2, num_tokens): row 0
    for the final state, row 1 for the context vector at ``influence_step``.
    """
    num_tokens, hidden_size = input_parts.shape[0], weights.encoder.weight_hh.shape[1]
    rows = 2 * hidden_size
    copies = input_parts.detach().expand(rows, -1, -1).requires_grad_(True)  # (rows, num_tokens, 3 * hidden_size)
    with torch.enable_grad():
        encoder_states, _, _, _, contexts = _forward(weights, copies, influence_step + 1)
        measured = torch.cat([encoder_states[:, -1], contexts[:, -1]], dim=-1)  # (rows, 2 * hidden_size)
        (jacobian,) = torch.autograd.grad(measured.diagonal().sum(), copies)  # (rows, num_tokens, 3 * hidden_size)
    gram = weights.encoder.weight_ih @ weights.encoder.weight_ih.T  # (3 * hidden_size, 3 * hidden_size)
    squared = ((jacobian @ gram) * jacobian).sum(dim=-1)  # (rows, num_tokens)
    return squared.reshape(2, hidden_size, num_tokens).sum(dim=1).sqrt()  # (2, num_tokens)


def encoder_decoder(
    inputs: torch.Tensor,
    hidden_size: int = 16,
    num_decoder_steps: int | None = None,
    *,
    attention_size: int | None = None,
    influence_step: int = 0,
    seed: int = 123,
) -> Seq2SeqTrace:
    """Encode ``inputs`` with a GRU, then decode with Bahdanau attention, and measure the bottleneck.

    The encoder starts from a zero state and reads one embedding per step. The
    decoder starts from the encoder's final state; at each step it scores every
    encoder state with the additive network, takes the softmax, forms the
    context vector and feeds it to its GRU. There is no target sentence and no
    training, so the context is the decoder's only input (Bahdanau's decoder
    also reads the previous output word). ``num_decoder_steps`` defaults to
    num_tokens. ``influence_step`` picks the decoder step whose context vector
    the influence is measured for (an index: 0 is the first step). At the
    first step the comparison is the chapter's: a plain decoder starts with
    only the final state, an attention decoder also reads the context vector.

    The trace and the influence run the same forward code; the influence is
    that code differentiated by autograd.

    Shapes: inputs (num_tokens, d_in); see ``Seq2SeqTrace`` for the fields.
    """
    check_seq_inputs(inputs)
    num_tokens, d_in = inputs.shape
    num_steps = num_tokens if num_decoder_steps is None else num_decoder_steps
    check_size("num_decoder_steps", num_steps, upper=MAX_NUM_TOKENS)
    if isinstance(influence_step, bool) or not isinstance(influence_step, int) or not 0 <= influence_step < num_steps:
        raise ValueError(f"influence_step must be a decoder step from 0 to {num_steps - 1}, got {influence_step!r}.")
    with torch.inference_mode(False):  # autograd must work even if the caller is in inference mode
        weights = seq2seq_weights(d_in, hidden_size, attention_size, seed)
        x = inputs.detach().to(torch.float32, copy=True)  # (num_tokens, d_in)
        input_parts = gru_input_part(weights.encoder, x)  # (num_tokens, 3 * hidden_size)
        with torch.no_grad():
            encoder_states, decoder_states, scores, attn_weights, contexts = _forward(weights, input_parts, num_steps)
        influence = _influence(weights, input_parts, influence_step)  # (2, num_tokens)
    return Seq2SeqTrace(
        inputs=x,
        encoder_states=encoder_states,
        final_state=encoder_states[-1],
        decoder_states=decoder_states,
        bahdanau_scores=scores,
        bahdanau_weights=attn_weights,
        attention_contexts=contexts,
        influence_step=influence_step,
        final_state_influence=influence[0],
        attention_context_influence=influence[1],
        seed=seed,
    )


def contrast_weights(d_in: int, attention_size: int = 16, seed: int = 123) -> tuple[torch.Tensor, ...]:
    """The untrained ``W_a``, ``U_a`` and ``v_a`` with which ``self_attention_contrast`` scores additively.

    Drawn like ``seq2seq_weights`` draws them (PyTorch's default ranges, a private generator seeded by
    ``seed``), so the same sizes and seed give the same three tensors.

    Shapes: → W_a (attention_size, d_in), U_a (attention_size, d_in), v_a (attention_size,).
    """
    check_size("d_in", d_in, upper=MAX_D_IN)
    check_size("attention_size", attention_size, upper=MAX_HIDDEN_SIZE)
    check_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    W_a = _uniform(generator, (attention_size, d_in), d_in**-0.5)  # (attention_size, d_in)
    U_a = _uniform(generator, (attention_size, d_in), d_in**-0.5)  # (attention_size, d_in)
    v_a = _uniform(generator, (attention_size,), attention_size**-0.5)  # (attention_size,)
    return W_a, U_a, v_a


def self_attention_contrast(inputs: torch.Tensor, attention_size: int = 16, seed: int = 123) -> SelfAttentionContrast:
    """The same sequence attending to itself, with dot products and with an additive network.

    The dot-product half is ``simplified_attention``'s (stage 3): softmax of
    inputs @ inputs.T. The additive half reuses ``additive_scores`` with
    untrained ``W_a`` and ``U_a`` of shape (attention_size, d_in) and ``v_a``
    from ``contrast_weights``.

    Shapes: inputs (num_tokens, d_in); every tensor returned is (num_tokens, num_tokens).
    """
    check_seq_inputs(inputs)
    x = inputs.detach().to(torch.float32, copy=True)  # (num_tokens, d_in)
    W_a, U_a, v_a = contrast_weights(x.shape[1], attention_size, seed)

    dot_product = simplified_attention(x)
    query_parts = x @ W_a.T  # (num_tokens, attention_size)
    key_parts = x @ U_a.T  # (num_tokens, attention_size)
    # QUERY_BLOCK queries at a time: one query per call (as the decoder works) costs a thousand
    # small calls at T = 1,024; all at once would hold num_tokens² x attention_size numbers.
    additive = torch.cat(
        [additive_scores(block, key_parts, v_a) for block in query_parts.split(QUERY_BLOCK)]
    )  # (num_tokens, num_tokens)
    return SelfAttentionContrast(
        dot_product_scores=dot_product.attn_scores,
        dot_product_weights=dot_product.attn_weights,
        additive_scores=additive,
        additive_weights=torch.softmax(additive, dim=-1),  # (num_tokens, num_tokens)
        additive_num_parameters=W_a.numel() + U_a.numel() + v_a.numel(),
    )
