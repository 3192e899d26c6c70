"""The Break it page's step text: what the two panels of weights show, and why a mistake may not show in
them (a ``views.mistakes.MistakeView``'s numbers)."""

from __future__ import annotations

from .glossary import term

SAME = 1e-6  # weights closer than this are the same (float32 rounding)
SCALING = ("no_scaling", "divide_by_d_k")
HELP = (
    "Each changes one or two lines of MultiHeadAttention: of its forward pass, or of __init__ for the two mask "
    "mistakes, which build the mask buffer. It runs beside the package's own code."
)


def scaling_changes_nothing(name: str, head_dim: int) -> bool:
    """Whether mistake ``name`` divides by the same number as the right code: √d_k = d_k = 1 when head_dim = 1."""
    return name in SCALING and head_dim == 1


def head_dim_note(head_dim: int) -> str:
    """Why a scaling mistake changes nothing at head_dim = 1, and where to see it change something."""
    return (
        f"Here d_k = head_dim = {head_dim}, and √1 = 1: the right code and this mistake divide by the same number, "
        "so nothing changes. Raise the sidebar's d_out to make head_dim = d_out // num_heads larger, or see the "
        "Against d_k step."
    )


def panels_text(weight_limit: float) -> str:
    """Step 2, above the panels: what is drawn, and on which scale."""
    scale = "1/(1 − p): dropout scales survivors up" if weight_limit != 1 else "attention weights are probabilities"
    return (
        f"Head 1's {term('attention_weights')} on your input (`attn_weights[0, 0]` in code): the package's code left, "
        "the mistake right, with the same parameters and inputs. One color scale runs from 0 to "
        f"{weight_limit:g} ({scale})."
    )


def difference_text(name: str, head_dim: int, max_difference: float) -> str:
    """Step 2, below the panels: how far the weights differ, and, when they are the same, why."""
    start = (
        "Gray cells marked “masked” are later tokens given weight 0. Where both are numbers, the weights differ by "
        f"at most **{max_difference:.4g}**"
    )
    if not max_difference < SAME:  # NaN (no cell is a number in both) counts as different
        return start + ": this mistake shows in the weights."
    if scaling_changes_nothing(name, head_dim):
        why = "with head_dim = 1, √d_k = d_k = 1, so dividing by either changes nothing."
    elif name == "merge_without_transpose":
        why = "this mistake comes after the weights, when the heads are merged."
    else:
        why = "this mistake does not show in head 1's weights here."
    return start + f". The two panels are the same: {why} The next step measures what it costs."


def curve_text(num_keys: int, head_dim: int) -> str:
    """The Against d_k step: what the two charts measure."""
    return (
        f"Random rows of {num_keys} keys at growing {term('d_k')}, through the package's softmax and the "
        "mistake's. First chart: the "
        f"largest weight in a row; 1 means {term('one_hot')}, all weight on one key. Second chart: the "
        f"{term('gradient')} that reaches W_query "
        "and W_key, measured with autograd (median over rows; each step up the axis is 10 times more). "
        f"The dotted line is this module's head_dim = {head_dim}."
    )
