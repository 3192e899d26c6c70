"""The Why attention page's text that quotes this run's RNN numbers."""

from __future__ import annotations

from .glossary import term


def encoder_text(hidden_size: int) -> str:
    """Step 1: the translation problem that opens the chapter, and the RNN encoder reading token by token."""
    return (
        "Chapter 3 opens with translation. Word by word it fails, because languages order words differently, "
        "so a model must read the whole sentence before it writes. Before attention that model was an "
        f"**{term('encoder_decoder', 'RNN encoder–decoder')}**.\n\n"
        "The encoder (here a one-way GRU, a common kind of RNN, which reads left to right) reads one token "
        "at a time and updates "
        f"a **{term('hidden_state')}** of {hidden_size} numbers. Row *j* is the state after reading tokens "
        "1 to *j*."
    )


def fading_text(hidden_size: int, share) -> str:
    """Step 2: the bottleneck and the fading of early tokens, measured by autograd."""
    return (
        "A plain decoder gets only the **last** hidden state, and that brings two separate problems. The "
        f"**bottleneck**: the whole sentence, however long, must fit in one vector of {hidden_size} numbers. "
        f"**Fading**: each update passes the previous state through the GRU's weight matrices and {term('gates')}, "
        "so an early token's influence on the final state tends to shrink with every later token.\n\n"
        f"Autograd measures the fading: the size (norm) of ∂final_state/∂x^(j), how much the final state changes "
        f"with token j (a {term('gradient')} for each of its numbers), as shares of the total. Here the first "
        f"token keeps **{share[0]:.1%}** and the last "
        f"**{share[-1]:.1%}**."
    )


def bahdanau_text(largest_weight: float, num_tokens: int) -> str:
    """Step 3: additive attention over the encoder states, untrained."""
    return (
        f"{term('bahdanau')} (2014) lets the decoder **look back at every encoder state**. At each decoder "
        "step a small network scores each state, score(s, h_j) = vᵀ tanh(W s + U h_j), and a "
        f"{term('softmax')} turns the scores into {term('attention_weights')} over the input tokens. "
        "Untrained, the network scores all states almost alike: the largest weight is "
        f"{largest_weight:.3f}, against 1/{num_tokens} = {1 / num_tokens:.3f}."
    )


def context_text(final, context, num_tokens: int) -> str:
    """Step 4: the first token's share of the final state against the attention context."""
    return (
        f"The {term('context_vector')}, the encoder states summed with the attention weights, reads every state "
        f"directly, so early tokens are not lost. The first token keeps **{context[0]:.1%}** of the context's "
        f"dependence, against **{final[0]:.1%}** of the final state's (an even share would be "
        f"{1 / num_tokens:.1%}). Try a longer sentence in the sidebar."
    )


def self_attention_text(additive_num_parameters: int) -> str:
    """Step 7: chapter 3 drops the RNN and scores with a dot product."""
    return (
        f"Chapter 3 drops the RNN: in {term('self_attention')} the sequence **attends to itself**, and the score "
        f"is a plain **{term('dot_product')}**, with no network to run for every pair. The additive network here "
        f"has {additive_num_parameters:,} untrained parameters. Left: dot-product attention weights, as on the "
        "Simplified attention page (section 3.3). Right: the same pairs scored by the additive network."
    )
