"""Clicks on a chart: ``st.plotly_chart(on_select=...)`` reports the points a click selects, and this module
reads them. Written for Streamlit 1.67, whose selection reports scatter points (with their ``customdata``)
but nothing for heatmap cells (streamlit issues 8760 and 15042): a figure that wants clicks on a heatmap puts
a transparent scatter point where a click should land (``figures.charts``).

A point comes from the browser, so a crafted message can hold anything: ``picked`` returns only whole
numbers, and the callback's settings path validates them again."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st


def picked(key: str) -> tuple[int, ...] | None:
    """The ``customdata`` of the first point selected in the chart ``key``, if it is a list of whole numbers."""
    event = st.session_state.get(key)
    try:
        points = event["selection"]["points"]
        values = tuple(points[0]["customdata"])
    except (KeyError, IndexError, TypeError):
        return None
    if not values or not all(type(v) is int for v in values):
        return None
    return values


def on_pick(key: str, action: Callable[..., None]) -> Callable[[], None]:
    """An ``on_select`` callback for the chart ``key``: ``action(*customdata)`` of the point a click selected;
    nothing when a click selected no point (a second click on the same point clears the selection)."""

    def callback() -> None:
        values = picked(key)
        if values is not None:
            action(*values)

    return callback
