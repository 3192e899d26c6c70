"""Colour is a measurement: each matrix has a kind, and the kind sets its colour scale.

* ``"weights"``: attention weights are probabilities, always on one fixed 0–1 scale;
* ``"signed"``: scores, Q/K/V, context vectors, W matrices: a diverging scale centred on 0,
  from −max|v| to +max|v|;
* ``"nonnegative"``: other values that cannot be negative, from 0 to their maximum;
* ``"mask"``: a boolean mask, two colours and a two-entry legend, no colour bar.

Panels meant to be compared take one ``value_range`` (from ``shared_range``), so equal
colours mean equal numbers. A range is never stretched over a sliver of the values: a weight
matrix whose entries all lie close together says so in its title, in numbers (``spread_note``).
"""

from __future__ import annotations

import numpy as np

from .layout import COLOUR_STOPS, DIVERGING, MASK_COLOURS, SEQUENTIAL, FigureStyle

WEIGHTS, SIGNED, NONNEGATIVE, MASK = "weights", "signed", "nonnegative", "mask"
KINDS = (WEIGHTS, SIGNED, NONNEGATIVE, MASK)
NARROW_SPREAD = 0.05  # weights that all lie within this of each other get their spread in the title


def infer_kind(values, value_name: str = "") -> str:
    """``"signed"`` if any value is negative; ``"weights"`` if the name says weight and every value is in
    0–1; else ``"nonnegative"``. Pages pass ``kind`` where they know better."""
    data = np.asarray(values, dtype=np.float64)
    finite = data[np.isfinite(data)]
    if finite.size and finite.min() < 0:
        return SIGNED
    if "weight" in value_name.lower() and (not finite.size or finite.max() <= 1 + 1e-6):
        return WEIGHTS
    return NONNEGATIVE


def colour_range(values, kind: str) -> tuple[float, float]:
    """The colour scale's (low, high) for ``values`` of this ``kind``: 0–1 for weights and masks,
    ±max|v| for signed values, 0–max for non-negative ones (1 where every value is 0)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}.")
    if kind in (WEIGHTS, MASK):
        return 0.0, 1.0
    data = np.asarray(values, dtype=np.float64)
    finite = data[np.isfinite(data)]
    largest = float(np.abs(finite).max()) if finite.size else 0.0
    largest = largest if largest > 0 else 1.0
    return (-largest, largest) if kind == SIGNED else (0.0, largest)


def shared_range(*matrices, kind: str) -> tuple[float, float]:
    """One colour range for panels shown together for comparison (pass it to each as ``value_range``)."""
    flat = [np.ravel(np.asarray(m, dtype=np.float64)) for m in matrices]
    return colour_range(np.concatenate(flat) if flat else np.zeros(0), kind)


def spread_note(values, kind: str) -> str:
    """For weights that all lie within ``NARROW_SPREAD`` of each other, their range in words (a line under the
    heatmap's title): on the fixed 0–1 scale they look alike, and they are nearly alike."""
    data = np.asarray(values, dtype=np.float64)
    finite = data[np.isfinite(data)]
    if kind != WEIGHTS or finite.size < 2:
        return ""
    low, high = float(finite.min()), float(finite.max())
    if high - low >= NARROW_SPREAD:
        return ""
    return f"all {low:.3f}–{high:.3f}, within {high - low:.3f}"


def colour_settings(kind: str, low: float, high: float, style: FigureStyle, show: bool = True) -> dict:
    """A heatmap trace's colour settings: an explicit range (zauto off, so plotly keeps it)."""
    colours = COLOUR_STOPS[SEQUENTIAL if kind in (WEIGHTS, NONNEGATIVE) else DIVERGING]
    if kind == MASK:
        colours = [[0, MASK_COLOURS[0]], [0.5, MASK_COLOURS[0]], [0.5, MASK_COLOURS[1]], [1, MASK_COLOURS[1]]]
    return {
        "colorscale": colours,
        "zmin": low,
        "zmax": high,
        "zauto": False,
        "showscale": show and kind != MASK,
        "colorbar": {"thickness": 14, "tickfont": {"size": style.tick_size}},
    }


def hidden_value(kind: str, masked: bool) -> str | float | None:
    """What a blank cell holds, for exports: a masked weight is exactly 0, a masked score −∞."""
    if kind == WEIGHTS:
        return 0.0
    if kind == SIGNED and masked:
        return "-inf"
    return None
