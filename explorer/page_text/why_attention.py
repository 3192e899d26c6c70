"""The Why attention page's step titles and the text that quotes this run's RNN numbers."""

from __future__ import annotations

STEPS = [
    "The encoder reads",
    "One vector for everything",
    "Bahdanau looks back",
    "What each one sees",
    "Trained: the right word",
    "Trained: the bottleneck in numbers",
    "To self-attention",
]


def fading_text(hidden_size: int, share) -> str:
    """Step 2: the bottleneck and the fading of early tokens, measured by autograd."""
    return (
        "A plain decoder gets only the **last** hidden state, and that brings two separate problems. The "
        f"**bottleneck**: the whole sentence, however long, must fit in one vector of {hidden_size} numbers. "
        "**Fading**: each update passes the previous state through the recurrent weights and gates, so an early "
        "token's influence on the final state tends to shrink with every later token (the gradients that train "
        "the encoder shrink along the same path). Autograd measures the fading: the norm of ∂final_state/∂x_j "
        f"for every token j, as shares of the total. Here the first token keeps **{share[0]:.1%}** and the last "
        f"**{share[-1]:.1%}**."
    )


def bahdanau_text(largest_weight: float, num_tokens: int) -> str:
    """Step 3: additive attention over the encoder states, untrained."""
    return (
        "Bahdanau attention (2014) lets the decoder **look back at every encoder state**. At each decoder "
        "step an additive network scores each state, score(s, h_j) = vᵀ tanh(W s + U h_j), and a softmax "
        "turns the scores into weights over the input positions. Untrained, the network scores all states "
        f"almost alike: the largest weight is {largest_weight:.3f}, against 1/{num_tokens} = {1 / num_tokens:.3f}."
    )


def context_text(final, context, num_tokens: int) -> str:
    """Step 4: the first token's share of the final state against the attention context."""
    return (
        "The context vector reads every encoder state directly, so early tokens are not lost: the first "
        f"token keeps **{context[0]:.1%}** of the context's dependence, against **{final[0]:.1%}** of the final "
        f"state's (an even share would be {1 / num_tokens:.1%}). Try a longer sentence in the sidebar."
    )


def self_attention_text(additive_num_parameters: int) -> str:
    """Step 7: chapter 3 drops the RNN and scores with a dot product."""
    return (
        "Chapter 3 drops the RNN: the sequence **attends to itself**, and the score is a plain **dot "
        f"product**, with no network to run for every pair (the additive one here has "
        f"{additive_num_parameters:,} untrained weights). Left: dot-product weights, as on the next "
        "page. Right: the same pairs scored by the additive network."
    )
