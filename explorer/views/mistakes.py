"""The cached call behind the "Break it" page: one mistake of ``attention.mistakes`` on the run's sentence.

Like every view, it selects and converts and does no attention math: the module is the one every page
builds from the settings (``models.module_for``), the sentence is the run's, and
``attention.run_mistake`` runs the right and the wrong forward pass and measures the difference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

import attention
from attention.mistake_measures import LARGE_D_K, Measure
from attention.mistake_steps import RIGHT, Steps
from explorer.models import module_for
from explorer.results import from_tensors
from explorer.runtime.memory import VIEW_ENTRIES
from explorer.settings import Settings
from explorer.views.chapter import BOOK_DROPOUT
from explorer.views.run import Run, run_view

SCALING_MISTAKES = {"no_scaling": "no scaling", "divide_by_d_k": "÷ d_k"}  # name → legend label


@dataclass(frozen=True)
class Curve:
    """``attention.SaturationCurve`` as numpy: every array (len(d_ks),)."""

    d_ks: np.ndarray
    right_max_weight: np.ndarray
    wrong_max_weight: np.ndarray
    right_grad_norm: np.ndarray
    wrong_grad_norm: np.ndarray
    right_param_grad: np.ndarray
    wrong_param_grad: np.ndarray
    wrong_starved: np.ndarray
    num_keys: int


@dataclass(frozen=True)
class MistakeView:
    """One mistake beside the right code on the sentence, the first head (``[0, 0]``) of ``MultiHeadAttention``.

    ``right_weights``/``wrong_weights`` (T, T) are the weights that multiply
    the values (after dropout for the dropout mistake); ``future`` (T, T) is
    True above the diagonal; ``right_output``/``wrong_output`` (T, d_out).
    ``dropout`` is the p the module was built with; ``weight_limit`` the
    largest weight the right code can give (1, or 1/(1 − p) after dropout).
    ``max_weight_difference`` is the largest |wrong − right| over the first head's
    weights that are numbers in both. ``large_d_k`` is the d_k at which the scaling mistakes are measured.
    """

    name: str
    pieces: tuple[str, ...]
    truncated_from: int | None
    dropout: float
    num_heads: int
    head_dim: int
    weight_limit: float
    right_weights: np.ndarray
    wrong_weights: np.ndarray
    future: np.ndarray
    right_output: np.ndarray
    wrong_output: np.ndarray
    max_output_difference: float
    max_weight_difference: float
    nan_tokens: int
    measures: tuple[Measure, ...]
    curve: Curve | None
    large_d_k: int = LARGE_D_K
    cell_inputs: tuple = ()  # (the MistakeRun, the module, x): what ``derivations.mistake_cell`` reads for a cell

    def measure(self, key: str) -> Measure:
        """The measure named ``key`` (as ``attention.MistakeRun.measure``)."""
        return next(measure for measure in self.measures if measure.key == key)

    @property
    def nan_rows(self) -> np.ndarray:
        """(T,) True for the rows of ``wrong_weights`` that are NaN."""
        return np.isnan(self.wrong_weights).any(axis=-1)


def changed_step(name: str) -> tuple[Callable, Callable]:
    """The step of the forward pass that mistake ``name`` replaces: (the package's function, the mistaken one)."""
    steps = attention.MISTAKES[name].steps
    (changed,) = [f.name for f in fields(Steps) if getattr(steps, f.name) is not getattr(RIGHT, f.name)]
    return getattr(RIGHT, changed), getattr(steps, changed)


def dropout_for(settings: Settings, name: str) -> float:
    """The p the module is built with: the sidebar's, or the book's 0.5 for the dropout mistake when that is 0."""
    if name == "dropout_without_rescale" and settings.dropout == 0:
        return BOOK_DROPOUT
    return settings.dropout


@run_view(max_entries=VIEW_ENTRIES)
def mistake_view(run: Run, name: str) -> MistakeView:
    """``attention.run_mistake(name, …)`` on the settings' module and sentence, as numpy.

    Raises ``ValueError`` for an unknown mistake or an empty sentence.
    """
    if name not in attention.MISTAKES:
        raise ValueError(f"Unknown mistake {name!r}; choose one of: {', '.join(attention.MISTAKES)}.")
    settings, prepared = run.settings, run.ready()
    p = dropout_for(settings, name)
    mha = module_for("MultiHeadAttention", replace(settings, dropout=p))  # random or a model's layer
    x = torch.tensor(prepared.inputs)  # (num_tokens, d_in), a copy of a read-only array
    result = attention.run_mistake(name, mha, x, seed=settings.seed)
    num_tokens = len(prepared.pieces)
    curve = result.curve
    both = result.right_weights.isfinite() & result.wrong_weights.isfinite()  # (T, T)
    weight_difference = (result.wrong_weights - result.right_weights).abs()[both]  # (cells that are numbers in both,)
    return MistakeView(
        name=name,
        pieces=prepared.pieces,
        truncated_from=prepared.truncated_from,
        dropout=p,
        num_heads=mha.num_heads,
        head_dim=mha.head_dim,
        weight_limit=1 / (1 - p) if name == "dropout_without_rescale" else 1.0,
        right_weights=result.right_weights.numpy(),
        wrong_weights=result.wrong_weights.numpy(),
        future=np.triu(np.ones((num_tokens, num_tokens), dtype=bool), k=1),
        right_output=result.right_output[0].numpy(),
        wrong_output=result.wrong_output[0].numpy(),
        max_output_difference=result.max_output_difference,
        max_weight_difference=weight_difference.max().item() if weight_difference.numel() else float("nan"),
        nan_tokens=result.nan_tokens,
        measures=result.measures,
        curve=None if curve is None else from_tensors(Curve, curve),
        cell_inputs=(result, mha, x),
    )
