"""The colour scales read the same with the common colour-vision deficiencies (issue 26, scope 7).

Each scale's stops are passed through Machado, Oliveira and Fernandes's (2009) simulation of protanopia,
deuteranopia and tritanopia at full severity (linear RGB), then compared in CIE L*a*b*:

* the 0–1 weights scale (and the non-negative one) still rises in lightness from end to end, so more is
  lighter for every viewer, with no colour to tell apart;
* the diverging scale's two ends (negative, positive) stay far apart from each other and from its centre (0);
* a mask's two colours, the masked cells' fill and the 0–1 scale's ends stay apart.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from attention.figures import COLOUR_STOPS, DIVERGING, MASK_COLOURS, MASKED_FILL, SEQUENTIAL

SIMULATIONS = {  # Machado et al. 2009, severity 1.0: linear RGB -> the same as seen with the deficiency
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
    "typical": np.eye(3).tolist(),
}
FAR_APART = 20.0  # ΔE*ab: colours this far apart are told apart at a glance (2.3 is just noticeable)


def rgb(colour: str) -> np.ndarray:
    """'#rrggbb' or 'rgb(r,g,b)' as sRGB in 0–1."""
    if colour.startswith("#"):
        return np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)]) / 255
    return np.array([float(v) for v in colour[colour.index("(") + 1 : -1].split(",")]) / 255


def seen(colour: str, deficiency: str) -> np.ndarray:
    """The CIE L*a*b* of ``colour`` as a viewer with ``deficiency`` sees it (D65 white)."""
    srgb = rgb(colour)
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    linear = np.clip(np.array(SIMULATIONS[deficiency]) @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def distance(a: str, b: str, deficiency: str) -> float:
    return float(np.linalg.norm(seen(a, deficiency) - seen(b, deficiency)))


@pytest.mark.parametrize("deficiency", SIMULATIONS)
def test_the_weights_scale_rises_in_lightness_for_every_viewer(deficiency):
    lightness = [seen(colour, deficiency)[0] for _, colour in COLOUR_STOPS[SEQUENTIAL]]
    assert all(b > a for a, b in itertools.pairwise(lightness)), lightness
    assert lightness[-1] - lightness[0] > 60  # from dark to light, not a sliver of lightness


@pytest.mark.parametrize("deficiency", SIMULATIONS)
def test_the_diverging_scale_keeps_its_sign_and_its_centre_apart(deficiency):
    stops = COLOUR_STOPS[DIVERGING]
    negative, centre, positive = stops[0][1], stops[len(stops) // 2][1], stops[-1][1]
    assert distance(negative, positive, deficiency) > FAR_APART
    assert distance(negative, centre, deficiency) > FAR_APART
    assert distance(positive, centre, deficiency) > FAR_APART


@pytest.mark.parametrize("deficiency", SIMULATIONS)
def test_masks_and_masked_cells_stay_apart(deficiency):
    visible, masked = MASK_COLOURS
    assert distance(visible, masked, deficiency) > FAR_APART
    low, high = COLOUR_STOPS[SEQUENTIAL][0][1], COLOUR_STOPS[SEQUENTIAL][-1][1]
    assert distance(MASKED_FILL, low, deficiency) > FAR_APART  # a masked cell is not a weight of 0
    assert distance(MASKED_FILL, high, deficiency) > 15  # nor of 1 (nearest with tritanopia: 17.5)


def test_the_simulation_hides_what_it_should():
    """Red and green, told apart by a typical viewer, nearly merge for a deuteranope: the simulation works."""
    red, green = "#d62728", "#2ca02c"
    assert distance(red, green, "typical") > 60
    assert distance(red, green, "deuteranopia") < distance(red, green, "typical") / 2
